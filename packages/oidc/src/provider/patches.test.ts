import { AsyncLocalStorage } from 'node:async_hooks';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { createManualClock } from '@idt/core';
import { describe, expect, it } from 'vitest';
import { quietStockProviderWarnings } from '../../../../test/support/quiet.js';
import { hashClientSecret } from '../clients/service.js';
import { NOT_ALLOWED_FOR_CLIENT } from '../policy/unauthorized-client.js';
import { loadOidcProvider } from './load.js';
import { patchProvider } from './patches.js';
import { scopeProviderRequestContext } from './request-context.js';

// These tests fail when the installed oidc-provider no longer has what a patch in patches.ts relies on.
// Upgrading it means reading each failure against the new code, then moving the exact pin.

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

quietStockProviderWarnings();

describe('oidc-provider under the patches', () => {
  it('is the exact version package.json pins', () => {
    const pinned = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).dependencies['oidc-provider'];
    expect(pinned).toMatch(/^\d+\.\d+\.\d+$/);
    expect(JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).version).toBe(pinned);
  });

  it('refresh grant: finds the token, revokes the grant when it is consumed, builds the successor without a jti', () => {
    expectInOrder(source('actions/grants/refresh_token.js'), [
      'await RefreshToken.find(refreshTokenValue',
      'if (refreshToken.consumed) {',
      'revoke(ctx, refreshToken.grantId)',
      "throw new InvalidGrant('refresh token already used')",
      'await refreshToken.consume();',
      "ctx.oidc.entity('RotatedRefreshToken', refreshToken);",
      'refreshToken = new RefreshToken({',
      'refreshTokenValue = await refreshToken.save();',
    ]);
    expect(source('actions/grants/refresh_token.js')).not.toMatch(/new RefreshToken\(\{[^}]*\bjti\b/);
  });

  it('models: save() generates a jti only when there is none; revoke() ends access tokens by grant', () => {
    expectInOrder(source('models/base_model.js'), ['if (!this.jti) {', 'this.jti = this.generateTokenId();']);
    expectInOrder(source('helpers/revoke.js'), ['provider.AccessToken,', '.map((model) => model?.revokeByGrantId(grantId))']);
    expectInOrder(source('models/refresh_token.js'), ["'consumed',", 'get isValid() {', 'return !this.consumed']);
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

  it('request context: one AsyncLocalStorage module behind Provider.ctx, entered with run() around each route', async () => {
    // request-context.ts scopes this storage to the provider's requests, counting each run() until it settles.
    expectInOrder(source('helpers/als.js'), [
      "import { AsyncLocalStorage } from 'node:async_hooks';",
      'export default new AsyncLocalStorage();',
    ]);
    expectInOrder(source('helpers/initialize_app.js'), ["import als from './als.js';", 'return als.run(ctx, () => next());']);
    expectInOrder(source('provider.js'), ['static get ctx() {', 'return als.getStore();']);
    const oidc = await loadOidcProvider();
    const storage = (await import('oidc-provider/lib/helpers/als.js')).default;
    const hooked = typeof (new AsyncLocalStorage() as unknown as { enabled?: unknown }).enabled === 'boolean';
    // Scoped when loaded, on the Node.js versions whose storage runs on async hooks.
    expect(await scopeProviderRequestContext()).toBe(hooked);
    const ctx = {};
    expect(await storage.run(ctx, async () => oidc.Provider.ctx)).toBe(ctx);
  });

  it('has the methods the patches replace, and the request context on Provider.ctx', async () => {
    const oidc = await loadOidcProvider();
    const provider = new oidc.Provider('https://patches.example');
    const Client = provider.Client as unknown as { prototype: Record<string, unknown> };
    const Session = provider.Session as unknown as { prototype: Record<string, unknown> };
    const RefreshToken = provider.RefreshToken as unknown as { prototype: Record<string, unknown>; find: unknown };
    const AccessToken = provider.AccessToken as unknown as { revokeByGrantId: unknown };
    expect(typeof Client.prototype.compareClientSecret).toBe('function');
    expect(typeof Client.prototype.includeSid).toBe('function');
    expect(typeof Session.prototype.ensureClientContainer).toBe('function');
    expect(typeof Session.prototype.sidFor).toBe('function');
    expect(typeof RefreshToken.find).toBe('function');
    expect(typeof RefreshToken.prototype.generateTokenId).toBe('function');
    expect(typeof AccessToken.revokeByGrantId).toBe('function');
    expect(Object.getOwnPropertyDescriptor(oidc.Provider, 'ctx')?.get).toBeTypeOf('function');
  });

  it('patched: hashed secrets and lockout, sid everywhere, successor ids from the rotated token', async () => {
    const oidc = await loadOidcProvider();
    const provider = new oidc.Provider('https://patches.example');
    const ended: string[] = [];
    const locked = new Set(['locked']);
    patchProvider(provider, oidc, {
      isLocked: (clientId) => locked.has(clientId),
      refreshReuseLeewayMs: 30_000,
      successorOf: (predecessor) => `next-${predecessor}`,
      familyRevocation: { end: async (grantId) => void ended.push(grantId) },
      clock: createManualClock(0),
    });
    const Client = provider.Client as unknown as { prototype: Record<string, (...args: unknown[]) => unknown> };
    const compare = Client.prototype.compareClientSecret as (this: unknown, actual: string) => boolean;
    const hash = hashClientSecret('s3cret');
    expect(compare.call({ clientId: 'app', clientSecret: hash }, 's3cret')).toBe(true);
    expect(compare.call({ clientId: 'app', clientSecret: hash }, 'wrong')).toBe(false);
    expect(compare.call({ clientId: 'locked', clientSecret: hash }, 's3cret')).toBe(false);
    expect((Client.prototype.includeSid as () => boolean)()).toBe(true);

    const RefreshToken = provider.RefreshToken as unknown as new (
      input: Record<string, unknown>,
    ) => { generateTokenId(): string };
    // Outside a rotation, ids stay random.
    const a = new RefreshToken({ accountId: 'u', grantId: 'g' }).generateTokenId();
    const b = new RefreshToken({ accountId: 'u', grantId: 'g' }).generateTokenId();
    expect(a).not.toBe(b);
    expect(a).toMatch(/^[\w-]{43}$/);

    await (provider.AccessToken as unknown as { revokeByGrantId(id: string): Promise<void> }).revokeByGrantId('grant-1');
    expect(ended).toEqual(['grant-1']);
  });
});

// middleware.ts and knex/module.ts answer some requests in oidc-provider's place; these tests fail when
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
    // knex/module.ts hands a POST's form to the GET route; the GET reads its parameters from the query.
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
