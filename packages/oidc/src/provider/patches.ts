import type { AsyncLocalStorage } from 'node:async_hooks';
import { type Clock, constantTimeEqual, createTtlCache } from '@idt/core';
import { evictFrom } from '@idt/core/knex';
import type Provider from 'oidc-provider';
import { CLIENT_CACHE_IDLE_MS, CLIENT_CACHE_JITTER, CLIENT_CACHE_MAX, CLIENT_CACHE_TTL_MS } from '../clients/cache.js';
import { hashClientSecret } from '../clients/service.js';
import type { FamilyRevocation } from '../policy/family-revocation.js';
import { classifyRedemption } from '../policy/refresh-rotation.js';

/** The oidc-provider module as `loadOidcProvider` gives it. */
type OidcProviderModule = typeof import('oidc-provider');

// Every change idt makes to oidc-provider's internals, in one place: the request context's scope
// (patch 0, once per process, when oidc-provider is loaded) and the patches of each provider
// instance (1 to 6, `patchProvider`). Each relies on a piece of oidc-provider's code that is not
// public API and names it; `patches.test.ts` has a test per patch that reads that code in the
// installed package (pinned exactly in package.json) and fails when it changed.

/**
 * `AsyncLocalStorage` as Node.js 20 and 22 implement it by default: on
 * async hooks, which stay on for every promise and async resource of the
 * process from its first `run()` until `disable()`.
 */
interface HookedStorage {
  enabled: boolean;
  _enable(): void;
}

const SCOPED = Symbol.for('idt.oidc.requestContextScoped');

/** True when `storage` runs on async hooks (Node.js 20 and 22 by default), false on async context frames (Node.js 24). */
function isHooked(storage: AsyncLocalStorage<unknown>): storage is AsyncLocalStorage<unknown> & HookedStorage {
  const candidate = storage as unknown as Partial<HookedStorage>;
  return typeof candidate.enabled === 'boolean' && typeof candidate._enable === 'function';
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    (typeof value === 'object' || typeof value === 'function') &&
    value !== null &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}

// 0. The request context is on only while the provider serves a request.
//    Relies on: `lib/helpers/als.js` being the one `AsyncLocalStorage` behind `Provider.ctx`, entered
//    with `run()` around each route's middleware chain (`lib/helpers/initialize_app.js`).

/**
 * Keeps oidc-provider's request context (its `AsyncLocalStorage`, read
 * through `Provider.ctx`) switched on only while the provider is serving a
 * request.
 *
 * oidc-provider enters its storage with `run()` around every route it
 * serves. On Node.js 20 and 22 the storage propagates through async hooks,
 * and once entered it keeps them on for good: every promise the process
 * makes from then on, in every request and every module, pays for an init
 * hook and the bookkeeping of its execution resource. A bearer read that
 * never reaches the provider spent 6 % of its samples in the hooks' own
 * functions (`perf`, the user-token whoami on SQLite), and 13 to 19 % more
 * CPU in all than with the hooks off (docs/benchmarks-history.md, twenty-third
 * pass).
 *
 * With this, each `run()` is counted until what its callback returned has
 * settled (a route's whole middleware chain), and the storage is disabled
 * when none is left: the hooks turn off unless another storage of the
 * process still needs them. The next `run()` turns them on again. Within a
 * run nothing changes: `Provider.ctx` answers the request's context, as
 * before, in everything the route awaits.
 *
 * It does nothing on Node.js 24, whose storage runs on async context frames
 * (no hooks, nothing to turn off), and it is applied once per storage.
 *
 * @returns whether the storage is now scoped to the provider's requests.
 */
export function scopeToRequests(storage: AsyncLocalStorage<unknown>): boolean {
  if (!isHooked(storage)) return false;
  const marked = storage as unknown as { [SCOPED]?: true };
  if (marked[SCOPED]) return true;
  const run = storage.run;
  let serving = 0;
  const settled = () => {
    serving -= 1;
    if (serving === 0) storage.disable();
  };
  const scopedRun = function scopedRun(
    this: unknown,
    store: unknown,
    callback: (...args: unknown[]) => unknown,
    ...args: unknown[]
  ) {
    serving += 1;
    let result: unknown;
    try {
      result = run.call(storage, store, callback, ...args);
    } catch (error) {
      settled();
      throw error;
    }
    if (!isThenable(result)) {
      settled();
      return result;
    }
    return Promise.resolve(result).then(
      (value) => {
        settled();
        return value;
      },
      (error: unknown) => {
        settled();
        throw error;
      },
    );
  };
  Object.defineProperty(storage, 'run', { value: scopedRun, configurable: true, writable: true });
  marked[SCOPED] = true;
  return true;
}

/**
 * Loads oidc-provider's request context (`oidc-provider/lib/helpers/als.js`,
 * the storage behind `Provider.ctx`) and scopes it to the provider's
 * requests ({@link scopeToRequests}). A version of oidc-provider without
 * that module is left as it is: the hooks then stay on, as without idt.
 */
export async function scopeProviderRequestContext(): Promise<boolean> {
  try {
    const module = (await import('oidc-provider/lib/helpers/als.js')) as { default?: AsyncLocalStorage<unknown> };
    return module.default ? scopeToRequests(module.default) : false;
  } catch {
    return false;
  }
}

/** Options of {@link patchProvider}. */
export interface ProviderPatchOptions {
  /** A locked-out client id gets `invalid_client` even with the right secret (SPEC 8.2). */
  readonly isLocked?: (clientId: string) => boolean;
  /** The reuse leeway of redeemed refresh tokens, in milliseconds (SPEC 3.6). */
  readonly refreshReuseLeewayMs: number;
  /** The successor value of a rotated refresh token (`createSuccessorDerivation`). */
  readonly successorOf: (predecessor: string) => string;
  readonly familyRevocation: FamilyRevocation;
  readonly clock: Clock;
  /**
   * Subscribes to changes of clients (the id, or `*` for all): with it, client
   * instances are kept per id until a change (a minute at most).
   */
  readonly onClientChange?: (listener: (clientId: string) => void) => void;
}

type ModelClass = { prototype: Record<string, unknown> } & Record<string, unknown>;

/** The identity session a sign-in completed (`complete-login.ts` puts it in the interaction result). */
function signedInSessionId(ProviderClass: OidcProviderModule['Provider']): string | undefined {
  const idt = ProviderClass.ctx?.oidc?.result?.idt as { sessionId?: string } | undefined;
  return idt?.sessionId;
}

/** Applies idt's patches to a new provider instance. */
export function patchProvider(provider: Provider, oidc: OidcProviderModule, options: ProviderPatchOptions): void {
  const ProviderClass = oidc.Provider;

  // 1. Client secrets are stored as SHA-256 hashes: compare the hash of what was presented, in
  //    constant time; a locked-out client fails even with the right secret.
  //    Relies on: `Client.prototype.compareClientSecret(actual)` deciding client_secret_basic/post.
  const ClientClass = provider.Client as unknown as ModelClass;
  ClientClass.prototype.compareClientSecret = function compareClientSecret(
    this: { clientId: string; clientSecret?: string },
    actual: string,
  ) {
    const matches =
      typeof actual === 'string' &&
      typeof this.clientSecret === 'string' &&
      constantTimeEqual(this.clientSecret, hashClientSecret(actual));
    return matches && !options.isLocked?.(this.clientId);
  };

  // 1b. Client instances are kept per client id, evicted when the client changes. oidc-provider
  //     keeps the clients an adapter returns in a 100-entry LRU keyed by a hash of their metadata;
  //     past 100 busy clients every request re-validated the whole metadata (`addClient`).
  //     Relies on: every lookup going through `provider.Client.find(id)`.
  if (options.onClientChange) {
    const ClientModel = provider.Client as unknown as { find(id: unknown): Promise<object | undefined> };
    const find = ClientModel.find.bind(provider.Client);
    const instances = createTtlCache<object | undefined>({
      ttlMs: CLIENT_CACHE_TTL_MS,
      idleMs: CLIENT_CACHE_IDLE_MS,
      jitter: CLIENT_CACHE_JITTER,
      max: CLIENT_CACHE_MAX,
    });
    options.onClientChange(evictFrom(instances));
    ClientModel.find = (id: unknown) =>
      // An unknown or suspended client (`undefined`) is not kept: it is looked up again next time.
      typeof id !== 'string' || id.length === 0 || id.length > 200 ? find(id) : instances.getOrLoad(id, () => find(id));
  }

  // 2. Every id token carries `sid` (SPEC 2.3), not only those of back-channel clients.
  //    Relies on: `Client.prototype.includeSid()` deciding whether id tokens get `sid`.
  ClientClass.prototype.includeSid = () => true;

  // 3. The `sid` of every client of a sign-in session is the identity session id, so id tokens,
  //    access tokens, logout tokens and the sessions API all name the session the same way.
  //    Relies on: `Session.prototype.ensureClientContainer(clientId)` creating a client's `sid`
  //    unless `sidFor(clientId)` has one, and on `Provider.ctx` being the request's context.
  const SessionClass = provider.Session as unknown as ModelClass;
  const ensureClientContainer = SessionClass.prototype.ensureClientContainer as (this: unknown, clientId: string) => void;
  SessionClass.prototype.ensureClientContainer = function ensureSid(
    this: {
      sidFor(clientId: string, value?: string): string | undefined;
      authorizations?: Record<string, { sid?: string }>;
    },
    clientId: string,
  ) {
    if (!this.sidFor(clientId)) {
      const existing = Object.values(this.authorizations ?? {}).find((entry) => entry?.sid)?.sid;
      const sid = existing ?? signedInSessionId(ProviderClass);
      if (sid) this.sidFor(clientId, sid);
    }
    ensureClientContainer.call(this, clientId);
  };

  // 4. The reuse leeway (SPEC 3.6): a refresh token redeemed at most the leeway ago is handed to the
  //    refresh grant as not consumed, so it rotates again; one redeemed longer ago stays consumed, and
  //    the grant revokes the family. The adapter reports `consumed` as the first redemption's time.
  //    Relies on: the refresh_token grant loading the token with `RefreshToken.find` and revoking the
  //    grant when `refreshToken.consumed` is truthy.
  const RefreshToken = provider.RefreshToken as unknown as ModelClass & {
    find(this: unknown, ...args: unknown[]): Promise<{ consumed?: number } | undefined>;
  };
  const findRefreshToken = RefreshToken.find;
  RefreshToken.find = async function findWithLeeway(this: unknown, ...args: unknown[]) {
    const token = await findRefreshToken.apply(this, args);
    if (token && typeof token.consumed === 'number') {
      const kind = classifyRedemption(token.consumed * 1000, options.clock.now().getTime(), options.refreshReuseLeewayMs);
      if (kind === 'tolerated-replay') token.consumed = undefined;
    }
    return token;
  };

  // 5. One live refresh token per family: a rotation's successor is derived from the rotated token's
  //    value, so concurrent redemptions and tolerated replays all hand out the same successor.
  //    Relies on: the refresh_token grant setting the `RotatedRefreshToken` entity before it builds the
  //    successor without a `jti`, and `save()` calling `generateTokenId()` for a token without one.
  const generateTokenId = RefreshToken.prototype.generateTokenId as (this: unknown) => string;
  RefreshToken.prototype.generateTokenId = function successorOrRandomId(this: unknown) {
    // The request oidc-provider is serving (its AsyncLocalStorage, patch 0).
    const rotated = ProviderClass.ctx?.oidc?.entities?.RotatedRefreshToken;
    if (rotated && rotated !== this && typeof rotated.jti === 'string') return options.successorOf(rotated.jti);
    return generateTokenId.call(this);
  };

  // 6. A revoked grant ends its access tokens too: they are JWTs oidc-provider never stores, so its
  //    `AccessToken.revokeByGrantId` has nothing to delete; idt refuses them by the family watermark.
  //    Relies on: oidc-provider's `revoke(ctx, grantId)` helper calling `AccessToken.revokeByGrantId`
  //    for every revoked grant (refresh replay, code replay, revocation endpoint, logout).
  const AccessToken = provider.AccessToken as unknown as ModelClass & {
    revokeByGrantId(this: unknown, grantId: string): Promise<void>;
  };
  const revokeAccessTokens = AccessToken.revokeByGrantId;
  AccessToken.revokeByGrantId = async function revokeFamily(this: unknown, grantId: string) {
    await Promise.all([revokeAccessTokens.call(this, grantId), options.familyRevocation.end(grantId)]);
  };
}
