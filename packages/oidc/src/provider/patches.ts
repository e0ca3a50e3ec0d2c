import { type Clock, constantTimeEqual, createTtlCache } from '@idt/core';
import { evictFrom } from '@idt/core/knex';
import type Provider from 'oidc-provider';
import { hashClientSecret } from '../clients/service.js';
import { CLIENT_CACHE_IDLE_MS, CLIENT_CACHE_JITTER, CLIENT_CACHE_MAX, CLIENT_CACHE_TTL_MS } from '../knex/adapter.js';
import type { FamilyRevocation } from '../policy/family-revocation.js';
import { classifyRedemption } from '../policy/refresh-rotation.js';
import type { OidcProviderModule } from './load.js';

/**
 * Every change idt makes to oidc-provider's internals, in one place. Each
 * patch relies on a piece of oidc-provider's code that is not public API;
 * `patches.test.ts` fails when the installed version (pinned exactly in
 * package.json) no longer has it.
 */
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

/** The context of the request oidc-provider is serving (its AsyncLocalStorage). */
function currentEntities(ProviderClass: OidcProviderModule['Provider']): Record<string, unknown> | undefined {
  return (ProviderClass as unknown as { ctx?: { oidc?: { entities?: Record<string, unknown> } } }).ctx?.oidc?.entities;
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
      const ctx = (ProviderClass as unknown as { ctx?: { oidc?: { result?: { idt?: { sessionId?: string } } } } }).ctx;
      const sid = existing ?? ctx?.oidc?.result?.idt?.sessionId;
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
    const rotated = currentEntities(ProviderClass)?.RotatedRefreshToken as { jti?: string } | undefined;
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
