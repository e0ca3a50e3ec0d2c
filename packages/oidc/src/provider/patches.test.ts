import { AsyncLocalStorage } from 'node:async_hooks';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { createManualClock } from '@idt/core';
import type Provider from 'oidc-provider';
import providerContext from 'oidc-provider/lib/helpers/als.js';
import { describe, expect, it } from 'vitest';
import { quietStockProviderWarnings } from '../../../../test/support/quiet.js';
import { hashClientSecret } from '../clients/service.js';
import { NOT_ALLOWED_FOR_CLIENT } from '../policy/unauthorized-client.js';
import { loadOidcProvider } from './load.js';
import { type ProviderPatchOptions, patchProvider, scopeProviderRequestContext, scopeToRequests } from './patches.js';

// One test of what each patch in patches.ts relies on: it reads that code in the installed oidc-provider
// and fails when it changed. Then one of what the patch does. Upgrading oidc-provider means reading each
// failure against the new code, then moving the exact pin.

const require = createRequire(import.meta.url);
const entry = require.resolve('oidc-provider');
const root = join(dirname(entry), '..');
const source = (path: string) => readFileSync(join(root, 'lib', path), 'utf8');

/** Asserts that `text` holds every fragment, in this order. */
function expectInOrder(text: string, fragments: string[]) {
  let from = 0;
  for (const fragment of fragments) {
    const at = text.indexOf(fragment, from);
    expect(at, `expected ${JSON.stringify(fragment)} after offset ${from}`).toBeGreaterThanOrEqual(0);
    from = at + fragment.length;
  }
}

/** Whether this Node.js runs AsyncLocalStorage on async hooks (20 and 22 by default; 24 runs it on context frames). */
const hooked = typeof (new AsyncLocalStorage() as unknown as { enabled?: unknown }).enabled === 'boolean';

const enabled = (storage: AsyncLocalStorage<unknown>) => (storage as unknown as { enabled: boolean }).enabled;

/** A promise and its resolve and reject, to hold a run open. */
function deferred<T = void>() {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((ok, fail) => {
    resolve = ok;
    reject = fail;
  });
  return { promise, resolve, reject };
}

/** A new provider instance, not yet patched. */
async function newProvider(): Promise<Provider> {
  const oidc = await loadOidcProvider();
  return new oidc.Provider('https://patches.example');
}

/** Applies the patches to `provider`, with options that record what they are asked. */
async function patch(provider: Provider, options: Partial<ProviderPatchOptions> = {}) {
  const ended: string[] = [];
  patchProvider(provider, await loadOidcProvider(), {
    refreshReuseLeewayMs: 30_000,
    successorOf: (predecessor) => `next-${predecessor}`,
    familyRevocation: { end: async (grantId) => void ended.push(grantId) },
    clock: createManualClock(0),
    ...options,
  });
  return { ended };
}

/** Runs `callback` as if oidc-provider were serving a request whose context is `ctx` (`Provider.ctx`). */
function serving<T>(ctx: object, callback: () => T): T {
  return providerContext.run(ctx, callback) as T;
}

quietStockProviderWarnings();

describe('oidc-provider under the patches', () => {
  it('is the exact version package.json pins', () => {
    const pinned = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).dependencies['oidc-provider'];
    expect(pinned).toMatch(/^\d+\.\d+\.\d+$/);
    expect(JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version).toBe(pinned);
  });

  it('request context: a getter closure per request for ctx.oidc, whose request data release-context.ts drops', () => {
    // Why the release exists: when this getter is no longer defined per request, it has nothing left to do.
    expectInOrder(source('helpers/initialize_app.js'), [
      'const ensureOIDC = async (ctx, next) => {',
      "Object.defineProperty(ctx, 'oidc', {",
      'get: () => {',
      'oidcCtx ||= new this.OIDCContext(ctx);',
    ]);
    expectInOrder(source('helpers/oidc_context.js'), ['this.entities = {};', 'this.claims = {};', 'this.resourceServers = {};']);
    expectInOrder(source('shared/assemble_params.js'), ['ctx.oidc.params = new Params(']);
    expectInOrder(source('shared/selective_body.js'), ['ctx.oidc.body =']);
  });
});

describe('patch 0: the request context is on only while the provider serves a request', () => {
  it('relies on: one AsyncLocalStorage module behind Provider.ctx, entered with run() around each route', async () => {
    expectInOrder(source('helpers/als.js'), [
      "import { AsyncLocalStorage } from 'node:async_hooks';",
      'export default new AsyncLocalStorage();',
    ]);
    expectInOrder(source('helpers/initialize_app.js'), ["import als from './als.js';", 'return als.run(ctx, () => next());']);
    expectInOrder(source('provider.js'), ['static get ctx() {', 'return als.getStore();']);
    const oidc = await loadOidcProvider();
    // Scoped when loaded, on the Node.js versions whose storage runs on async hooks.
    expect(await scopeProviderRequestContext()).toBe(hooked);
    const ctx = {};
    expect(await providerContext.run(ctx, async () => oidc.Provider.ctx)).toBe(ctx);
  });

  describe.skipIf(!hooked)('scopeToRequests (async hooks)', () => {
    it('keeps the storage on while a run has not settled, and turns it off after', async () => {
      const storage = new AsyncLocalStorage<string>();
      expect(scopeToRequests(storage)).toBe(true);
      const gate = deferred();
      const seen: Array<string | undefined> = [];
      const run = storage.run('request-1', async () => {
        seen.push(storage.getStore());
        await gate.promise;
        await nextTurn();
        seen.push(storage.getStore());
        return 'answer';
      });
      await nextTurn();
      expect(enabled(storage)).toBe(true);
      gate.resolve();
      expect(await run).toBe('answer');
      expect(seen).toEqual(['request-1', 'request-1']);
      expect(enabled(storage)).toBe(false);
      expect(storage.getStore()).toBeUndefined();
    });

    it('stays on until the last of overlapping runs settles, each seeing its own store to the end', async () => {
      const storage = new AsyncLocalStorage<string>();
      scopeToRequests(storage);
      const first = deferred();
      const second = deferred();
      const seen: string[] = [];
      const body = (gate: Promise<void>) => async () => {
        await gate;
        await nextTurn();
        seen.push(String(storage.getStore()));
      };
      const one = storage.run('one', body(first.promise));
      const two = storage.run('two', body(second.promise));
      first.resolve();
      await one;
      expect(enabled(storage)).toBe(true);
      second.resolve();
      await two;
      expect(seen).toEqual(['one', 'two']);
      expect(enabled(storage)).toBe(false);
      // The next run turns it on again.
      await storage.run('three', async () => {
        await nextTurn();
        expect(storage.getStore()).toBe('three');
        expect(enabled(storage)).toBe(true);
      });
      expect(enabled(storage)).toBe(false);
    });

    it('turns off after a run that returns at once, throws or rejects, and passes the outcome on', async () => {
      const storage = new AsyncLocalStorage<string>();
      scopeToRequests(storage);
      expect(storage.run('sync', () => storage.getStore())).toBe('sync');
      expect(enabled(storage)).toBe(false);
      expect(() =>
        storage.run('throws', () => {
          throw new Error('thrown');
        }),
      ).toThrow('thrown');
      expect(enabled(storage)).toBe(false);
      await expect(
        storage.run('rejects', async () => {
          await nextTurn();
          throw new Error('rejected');
        }),
      ).rejects.toThrow('rejected');
      expect(enabled(storage)).toBe(false);
    });

    it('counts a run nested in one of the same store, and wraps a storage once', async () => {
      const storage = new AsyncLocalStorage<string>();
      expect(scopeToRequests(storage)).toBe(true);
      const run = storage.run;
      expect(scopeToRequests(storage)).toBe(true);
      expect(storage.run).toBe(run);
      const outer = deferred();
      const done = storage.run('same', async () => {
        await storage.run('same', async () => nextTurn());
        expect(enabled(storage)).toBe(true);
        await outer.promise;
        return storage.getStore();
      });
      await nextTurn();
      outer.resolve();
      expect(await done).toBe('same');
      expect(enabled(storage)).toBe(false);
    });

    it('leaves other storages of the process on', async () => {
      const provider = new AsyncLocalStorage<string>();
      const host = new AsyncLocalStorage<string>();
      scopeToRequests(provider);
      await host.run('host', async () => {
        await provider.run('provider', async () => nextTurn());
        await nextTurn();
        expect(host.getStore()).toBe('host');
      });
      expect(enabled(provider)).toBe(false);
      expect(enabled(host)).toBe(true);
      host.disable();
    });
  });

  it('changes nothing of a storage that does not run on async hooks', () => {
    const storage = new AsyncLocalStorage<string>();
    const framed = hooked
      ? // What Node.js 24's storage looks like to it: no `enabled` flag, no `_enable`.
        ({ run: storage.run.bind(storage), disable: () => {}, getStore: () => undefined } as unknown as AsyncLocalStorage<string>)
      : storage;
    const run = framed.run;
    expect(scopeToRequests(framed)).toBe(false);
    expect(framed.run).toBe(run);
  });
});

describe('patch 1: hashed client secrets, refused while the client is locked out', () => {
  it('relies on: client_secret_basic and client_secret_post deciding through Client.prototype.compareClientSecret', async () => {
    expectInOrder(source('shared/client_auth.js'), [
      "case 'client_secret_basic':",
      "case 'client_secret_post': {",
      'const matches = await ctx.oidc.client.compareClientSecret(clientSecret);',
      'if (!matches) {',
      "throw new InvalidClientAuth('invalid secret provided');",
    ]);
    expectInOrder(source('models/client.js'), ['compareClientSecret(actual) {']);
    const Client = (await newProvider()).Client as unknown as { prototype: Record<string, unknown> };
    expect(typeof Client.prototype.compareClientSecret).toBe('function');
  });

  it('compares the hash of the presented secret, and refuses a locked-out client even with the right one', async () => {
    const provider = await newProvider();
    await patch(provider, { isLocked: (clientId) => clientId === 'locked' });
    const Client = provider.Client as unknown as { prototype: { compareClientSecret(this: unknown, actual: string): boolean } };
    const compare = Client.prototype.compareClientSecret;
    const hash = hashClientSecret('s3cret');
    expect(compare.call({ clientId: 'app', clientSecret: hash }, 's3cret')).toBe(true);
    expect(compare.call({ clientId: 'app', clientSecret: hash }, 'wrong')).toBe(false);
    expect(compare.call({ clientId: 'app', clientSecret: 's3cret' }, 's3cret')).toBe(false);
    expect(compare.call({ clientId: 'locked', clientSecret: hash }, 's3cret')).toBe(false);
  });
});

describe('patch 1b: one client instance per id, until the client changes', () => {
  it('relies on: every client lookup going through provider.Client.find', async () => {
    expectInOrder(source('models/client.js'), ['static async find(id) {']);
    expectInOrder(source('shared/client_auth.js'), ['const client = await provider.Client.find(clientId);']);
    expectInOrder(source('actions/authorization/client.js'), [
      'const client = await ctx.oidc.provider.Client.find(ctx.oidc.params.client_id);',
    ]);
    expectInOrder(source('actions/end_session.js'), ['ctx.oidc.provider.Client.find(']);
    expectInOrder(source('actions/introspection.js'), ['const client = await provider.Client.find(token.clientId);']);
    const Client = (await newProvider()).Client as unknown as { find: unknown };
    expect(typeof Client.find).toBe('function');
  });

  it('keeps what find answers per id, looks it up again after a change, and keeps no unknown client', async () => {
    const provider = await newProvider();
    const Client = provider.Client as unknown as { find(id: unknown): Promise<object | undefined> };
    const loads: unknown[] = [];
    Client.find = async (id) => {
      loads.push(id);
      return id === 'missing' ? undefined : { id };
    };
    let changed: ((clientId: string) => void) | undefined;
    await patch(provider, {
      onClientChange: (listener) => {
        changed = listener;
      },
    });
    const first = await Client.find('app');
    expect(await Client.find('app')).toBe(first);
    expect(loads).toEqual(['app']);
    changed?.('app');
    expect(await Client.find('app')).not.toBe(first);
    expect(await Client.find('missing')).toBeUndefined();
    expect(await Client.find('missing')).toBeUndefined();
    expect(loads).toEqual(['app', 'app', 'missing', 'missing']);
  });
});

describe('patch 2: sid in every id token', () => {
  it('relies on: Client.prototype.includeSid() deciding whether codes and id tokens get sid', async () => {
    expectInOrder(source('helpers/process_response_types.js'), [
      "if (ctx.oidc.client.includeSid() || (ctx.oidc.claims.id_token && 'sid' in ctx.oidc.claims.id_token)) {",
      'code.sid = ctx.oidc.session.sidFor(ctx.oidc.client.clientId);',
      "if (ctx.oidc.client.includeSid() || (ctx.oidc.claims.id_token && 'sid' in ctx.oidc.claims.id_token)) {",
      "idToken.set('sid', ctx.oidc.session.sidFor(ctx.oidc.client.clientId));",
    ]);
    expectInOrder(source('models/client.js'), ['includeSid() {']);
  });

  it('includes sid for every client', async () => {
    const provider = await newProvider();
    await patch(provider);
    const Client = provider.Client as unknown as { prototype: { includeSid(): boolean } };
    expect(Client.prototype.includeSid()).toBe(true);
  });
});

describe("patch 3: the identity session id as every client's sid", () => {
  it('relies on: ensureClientContainer creating the sid unless sidFor has one, after the interaction result is set', async () => {
    expectInOrder(source('models/session.js'), [
      'sidFor(clientId, value) {',
      'ensureClientContainer(clientId) {',
      'if (!this.sidFor(clientId)) {',
      'this.sidFor(clientId, nanoid());',
    ]);
    expectInOrder(source('actions/authorization/resume.js'), ['ctx.oidc.result = result;']);
    expectInOrder(source('actions/authorization/session.js'), [
      'ctx.oidc.session.ensureClientContainer(ctx.oidc.params.client_id);',
    ]);
    const Session = (await newProvider()).Session as unknown as { prototype: Record<string, unknown> };
    expect(typeof Session.prototype.ensureClientContainer).toBe('function');
    expect(typeof Session.prototype.sidFor).toBe('function');
  });

  it("names each client's sid after the signed-in identity session, shared by the clients of one session", async () => {
    const provider = await newProvider();
    await patch(provider);
    type SessionLike = { ensureClientContainer(clientId: string): void; sidFor(clientId: string): string | undefined };
    const Session = provider.Session as unknown as new (payload?: object) => SessionLike;
    const session = new Session({ accountId: 'user-1' });
    serving({ oidc: { result: { idt: { sessionId: 'identity-session' } } } }, () => session.ensureClientContainer('app'));
    expect(session.sidFor('app')).toBe('identity-session');
    // A second client of the same session, outside that request: the same sid.
    session.ensureClientContainer('other-app');
    expect(session.sidFor('other-app')).toBe('identity-session');
    // Without a signed-in identity session, oidc-provider's own random sid.
    const anonymous = new Session({ accountId: 'user-2' });
    anonymous.ensureClientContainer('app');
    expect(anonymous.sidFor('app')).toMatch(/^[\w-]{20,}$/);
  });
});

describe('patch 4: the reuse leeway of refresh tokens', () => {
  it('relies on: the refresh grant finding the token and revoking the grant when it is consumed', () => {
    expectInOrder(source('actions/grants/refresh_token.js'), [
      'await RefreshToken.find(refreshTokenValue',
      'if (refreshToken.consumed) {',
      'revoke(ctx, refreshToken.grantId)',
      "throw new InvalidGrant('refresh token already used')",
    ]);
    expectInOrder(source('models/refresh_token.js'), ["'consumed',", 'get isValid() {', 'return !this.consumed']);
  });

  it('hands a token redeemed within the leeway on as not consumed, and one redeemed longer ago as consumed', async () => {
    const provider = await newProvider();
    const RefreshToken = provider.RefreshToken as unknown as { find(id: string): Promise<{ consumed?: number } | undefined> };
    const nowSeconds = 1_772_359_200;
    const consumedAt: Record<string, number> = { recent: nowSeconds - 30, old: nowSeconds - 31 };
    RefreshToken.find = async (id) => (id === 'unknown' ? undefined : { consumed: consumedAt[id] });
    await patch(provider, { clock: createManualClock(nowSeconds * 1000) });
    expect((await RefreshToken.find('recent'))?.consumed).toBeUndefined();
    expect((await RefreshToken.find('old'))?.consumed).toBe(nowSeconds - 31);
    expect((await RefreshToken.find('fresh'))?.consumed).toBeUndefined();
    expect(await RefreshToken.find('unknown')).toBeUndefined();
  });
});

describe('patch 5: the successor of a rotated refresh token, derived from it', () => {
  it('relies on: the rotation setting RotatedRefreshToken, then saving a successor without a jti', () => {
    expectInOrder(source('actions/grants/refresh_token.js'), [
      'await refreshToken.consume();',
      "ctx.oidc.entity('RotatedRefreshToken', refreshToken);",
      'refreshToken = new RefreshToken({',
      'refreshTokenValue = await refreshToken.save();',
    ]);
    expect(source('actions/grants/refresh_token.js')).not.toMatch(/new RefreshToken\(\{[^}]*\bjti\b/);
    expectInOrder(source('models/base_model.js'), ['if (!this.jti) {', 'this.jti = this.generateTokenId();']);
  });

  it("derives the successor's id within a rotation, and keeps ids random outside one", async () => {
    const provider = await newProvider();
    await patch(provider);
    const RefreshToken = provider.RefreshToken as unknown as new (
      input: Record<string, unknown>,
    ) => { generateTokenId(): string };
    const a = new RefreshToken({ accountId: 'u', grantId: 'g' }).generateTokenId();
    const b = new RefreshToken({ accountId: 'u', grantId: 'g' }).generateTokenId();
    expect(a).not.toBe(b);
    expect(a).toMatch(/^[\w-]{43}$/);
    const rotation = { oidc: { entities: { RotatedRefreshToken: { jti: 'rotated' } } } };
    expect(serving(rotation, () => new RefreshToken({ accountId: 'u', grantId: 'g' }).generateTokenId())).toBe('next-rotated');
  });
});

describe('patch 6: a revoked grant ends its access tokens', () => {
  it('relies on: revoke() calling AccessToken.revokeByGrantId for every revoked grant', async () => {
    expectInOrder(source('helpers/revoke.js'), ['provider.AccessToken,', '.map((model) => model?.revokeByGrantId(grantId))']);
    const AccessToken = (await newProvider()).AccessToken as unknown as { revokeByGrantId: unknown };
    expect(typeof AccessToken.revokeByGrantId).toBe('function');
  });

  it("ends the grant's token family", async () => {
    const provider = await newProvider();
    const { ended } = await patch(provider);
    await (provider.AccessToken as unknown as { revokeByGrantId(id: string): Promise<void> }).revokeByGrantId('grant-1');
    expect(ended).toEqual(['grant-1']);
  });
});

// middleware.ts and edge.ts answer some requests in oidc-provider's place; these tests fail when
// what they rely on changes.
describe('oidc-provider under the answers idt gives in its place', () => {
  it('introspection: a JWT is refused with unsupported_token_type only after client authentication', () => {
    // middleware.ts answers a JWT access token itself once oidc-provider refused it for an authenticated client.
    expectInOrder(source('actions/introspection.js'), [
      '...clientAuth,',
      'rejectDupes.bind(undefined, {}),',
      'async function validateTokenPresence(ctx, next) {',
      'rejectStructuredTokens,',
      'async function renderTokenResponse(ctx) {',
    ]);
    expectInOrder(source('shared/reject_structured_tokens.js'), [
      'tokenIsJWT = !!decodeProtectedHeader(params.token);',
      'if (tokenIsJWT) {',
      'throw new UnsupportedTokenType(',
    ]);
    expectInOrder(source('helpers/errors.js'), ["export const UnsupportedTokenType = E('unsupported_token_type');"]);
    expectInOrder(source('helpers/initialize_app.js'), [
      "post('introspection', routes.introspection, error('introspection.error'),",
    ]);
    expectInOrder(source('shared/error_handler.js'), ['} else if (eventName) {', 'provider.emit(eventName, ctx, err);']);
  });

  it('token endpoint: a grant type the client is not registered for is invalid_request with a fixed description', () => {
    // middleware.ts answers unauthorized_client instead (RFC 6749 5.2).
    expectInOrder(source('actions/token.js'), [
      '...clientAuth,',
      'async function supportedGrantTypeCheck(ctx, next) {',
      'async function allowedGrantTypeCheck(ctx, next) {',
      'if (!ctx.oidc.client.grantTypeAllowed(ctx.oidc.params.grant_type)) {',
      `throw new InvalidRequest('${NOT_ALLOWED_FOR_CLIENT.grantType}');`,
    ]);
    expectInOrder(source('actions/authorization/response_parameters.js'), [
      'if (!ctx.oidc.client.responseTypeAllowed(params.response_type)) {',
      `throw new InvalidRequest('${NOT_ALLOWED_FOR_CLIENT.responseType}');`,
    ]);
  });

  it('authorization endpoint: POST is routed only with SameSite=None session cookies, so idt serves it as a GET', () => {
    // edge.ts hands a POST's form to the GET route; the GET reads its parameters from the query.
    expectInOrder(source('helpers/initialize_app.js'), [
      "get('authorization', routes.authorization, authError, ...authorization);",
      'if (enableHttpPostMethods) {',
      "post('authorization', routes.authorization, authError, ...authorization);",
    ]);
    expectInOrder(source('helpers/configuration.js'), [
      "if (this.enableHttpPostMethods && this.cookies.long.sameSite?.toLowerCase() !== 'none') {",
    ]);
    expectInOrder(source('shared/assemble_params.js'), ["const params = ctx.method === 'POST' ? ctx.oidc.body : ctx.query;"]);
  });
});
