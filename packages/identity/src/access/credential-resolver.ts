import { type Clock, type CredentialResolver, createTtlCache, type JwtClaims, type Principal, systemClock } from '@idt/core';
import { ProblemError, UnauthorizedError } from '@idt/problem';
import { expandRoles } from '../authorization/roles.js';
import { parseScopes, permissionsForScopes } from '../authorization/scopes.js';
import { CacheNamespaces, type CacheSubscriber } from './cache-namespaces.js';
import type {
  AccessStore,
  ApiKeyAccess,
  ApiKeyLookup,
  ClientAccess,
  ClientLookup,
  MembershipAccess,
  RevocationSubject,
  SessionAccess,
  SessionLookup,
  UserAccess,
} from './store.js';
import { GRANT_CLAIM } from './store.js';

/** Options of {@link createCredentialResolver}. */
export interface CredentialResolverOptions {
  readonly store: AccessStore;
  readonly apiKeys?: ApiKeyLookup;
  readonly sessions?: SessionLookup;
  readonly clients?: ClientLookup;
  /** Subscribes to cache evictions (see `createCacheInvalidator`); without it entries live for `cacheTtlMs`. */
  readonly subscribe?: CacheSubscriber;
  /** How long lookups are reused; 30 seconds by default. Evictions end them sooner. */
  readonly cacheTtlMs?: number;
  readonly clock?: Clock;
}

const ALL = '*';
const NO_PERMISSIONS: ReadonlySet<string> = new Set();
const MISSING = Symbol('missing');
type Cached<T> = T | typeof MISSING;

function tokenInvalid(message: string): UnauthorizedError {
  return new UnauthorizedError(message, {
    'www-authenticate': `Bearer error="invalid_token", error_description="${message.replace(/"/g, "'")}"`,
  });
}

/** Whether a credential's own expiry has passed. */
function hasExpired(expiresAt: string | null, now: Date): boolean {
  return expiresAt !== null && new Date(expiresAt).getTime() <= now.getTime();
}

/**
 * Resolves verified credentials into principals (the identity half of the
 * authentication pipeline): revocation watermarks, user and membership
 * state, role expansion per organization, scope expansion for service
 * accounts and API keys. Every lookup is cached and evicted by the identity
 * module's invalidations, so the hot path does no database round trip.
 */
export function createCredentialResolver(options: CredentialResolverOptions): CredentialResolver & {
  /** The user's permissions in an organization (empty unless the membership is active). */
  permissionsOf(userId: string, organizationId: string): Promise<Set<string>>;
} {
  const { store } = options;
  const clock = options.clock ?? systemClock;
  const ttlMs = options.cacheTtlMs ?? 30_000;
  const users = createTtlCache<Cached<UserAccess>>({ ttlMs });
  const memberships = createTtlCache<Cached<MembershipAccess>>({ ttlMs });
  const revocations = createTtlCache<number>({ ttlMs });
  const apiKeys = createTtlCache<Cached<ApiKeyAccess>>({ ttlMs });
  const sessions = createTtlCache<Cached<SessionAccess>>({ ttlMs });
  const clients = createTtlCache<Cached<ClientAccess>>({ ttlMs });

  const evict =
    (cache: { delete(key: string): void; clear(): void }, matchAll = false) =>
    (key: string) => {
      if (key === ALL || matchAll) cache.clear();
      else cache.delete(key);
    };
  options.subscribe?.(CacheNamespaces.users, evict(users));
  options.subscribe?.(CacheNamespaces.memberships, evict(memberships));
  options.subscribe?.(CacheNamespaces.revocations, evict(revocations));
  // Keys and sessions are cached by credential value, evicted by id: drop them all.
  options.subscribe?.(CacheNamespaces.apiKeys, evict(apiKeys, true));
  options.subscribe?.(CacheNamespaces.sessions, evict(sessions, true));
  options.subscribe?.(CacheNamespaces.clients, evict(clients));

  const orMissing = <T>(value: T | undefined): Cached<T> => (value === undefined ? MISSING : value);
  const found = <T>(value: Cached<T>): T | undefined => (value === MISSING ? undefined : value);

  const user = async (userId: string) =>
    found(await users.getOrLoad(userId, async () => orMissing(await store.findUser(userId))));
  const membership = async (userId: string, organizationId: string) =>
    found(
      await memberships.getOrLoad(`${userId}:${organizationId}`, async () =>
        orMissing(await store.findMembership(userId, organizationId)),
      ),
    );
  /** A token's scope set and what it grants a service account, shared by every token with the same `scope` claim. */
  const scopeSets = new Map<string, { scopes: ReadonlySet<string>; permissions: ReadonlySet<string> }>();
  function scopesOf(scope: unknown) {
    const key = typeof scope === 'string' ? scope : '';
    let entry = scopeSets.get(key);
    if (!entry) {
      const scopes = parseScopes(key);
      entry = { scopes, permissions: permissionsForScopes(scopes) };
      if (scopeSets.size >= 1000) scopeSets.clear();
      scopeSets.set(key, entry);
    }
    return entry;
  }

  /** The revocation watermark of a subject: the cached number, else a promise of it. */
  const watermark = (subject: RevocationSubject, id: string): number | Promise<number> => {
    const key = `${subject}:${id}`;
    return revocations.get(key) ?? revocations.getOrLoad(key, async () => (await store.findRevocation(subject, id)) ?? 0);
  };

  /**
   * Throws when a watermark is after `iat`. Answers synchronously when every
   * watermark is cached (the hot path), else with a promise.
   */
  function assertNotRevoked(
    iat: number,
    subjects: Array<[RevocationSubject, string | null | undefined]>,
  ): undefined | Promise<undefined> {
    for (let index = 0; index < subjects.length; index++) {
      const [subject, id] = subjects[index] as [RevocationSubject, string | null | undefined];
      if (!id) continue;
      const mark = watermark(subject, id);
      // The pending lookup is handed on, never dropped: dropped, its rejection (database down) would go unhandled.
      if (typeof mark !== 'number') return assertNotRevokedFrom(iat, subjects, index, mark);
      if (iat < mark) throw tokenInvalid(`The token was revoked (${subject}).`);
    }
    return undefined;
  }

  /** Continues {@link assertNotRevoked} from the subject at `start`, whose watermark is `pending`. */
  async function assertNotRevokedFrom(
    iat: number,
    subjects: Array<[RevocationSubject, string | null | undefined]>,
    start: number,
    pending: Promise<number>,
  ): Promise<undefined> {
    const [first] = subjects[start] as [RevocationSubject, string];
    if (iat < (await pending)) throw tokenInvalid(`The token was revoked (${first}).`);
    for (const [subject, id] of subjects.slice(start + 1)) {
      if (id && iat < (await watermark(subject, id))) throw tokenInvalid(`The token was revoked (${subject}).`);
    }
    return undefined;
  }

  async function activeUser(userId: string, onMissing: () => Error): Promise<UserAccess> {
    const found = await user(userId);
    if (found?.status !== 'active') throw onMissing();
    return found;
  }

  async function tenantPermissions(
    userId: string,
    tenantId: string | null,
  ): Promise<{ permissions: Set<string>; tenant: string | null }> {
    if (tenantId === null) return { permissions: new Set(), tenant: null };
    const found = await membership(userId, tenantId);
    if (found?.status !== 'active' || found.organizationStatus !== 'active') {
      throw new ProblemError('Tenant.Forbidden', 'The caller is not an active member of this organization.');
    }
    return { permissions: permissionsOfMembership(found), tenant: found.organizationId };
  }

  /** Role expansion, once per cached membership (a new load, after an eviction, expands again). */
  const expanded = new WeakMap<MembershipAccess, Set<string>>();
  function permissionsOfMembership(found: MembershipAccess): Set<string> {
    let permissions = expanded.get(found);
    if (!permissions) {
      permissions = expandRoles(found.roles, found.customRoles);
      expanded.set(found, permissions);
    }
    return permissions;
  }

  async function resolveToken(claims: JwtClaims, tenantId: string | null): Promise<Principal> {
    const clientId =
      (typeof claims.client_id === 'string' ? claims.client_id : undefined) ?? (claims.azp as string | undefined) ?? null;
    const { scopes, permissions: scopePermissions } = scopesOf(claims.scope);
    const iat = typeof claims.iat === 'number' ? claims.iat : 0;
    const sessionId = typeof claims.sid === 'string' ? claims.sid : null;
    const grantId = claims[GRANT_CLAIM];
    const isService = clientId !== null && claims.sub === clientId;
    const revocationCheck = assertNotRevoked(iat, [
      ['client', clientId],
      ['user', isService ? null : claims.sub],
      ['session', sessionId],
      ['grant', typeof grantId === 'string' ? grantId : null],
    ]);
    if (revocationCheck) await revocationCheck;
    if (clientId && options.clients) {
      const client = found(
        clients.get(clientId) ??
          (await clients.getOrLoad(clientId, async () => orMissing(await options.clients?.findClient(clientId)))),
      );
      if (client?.status !== 'active') throw tokenInvalid('The client of this token is suspended or deleted.');
    }
    if (isService) {
      return {
        kind: 'service',
        subject: claims.sub,
        userId: null,
        clientId,
        organizationId: tenantId,
        permissions: tenantId ? scopePermissions : NO_PERMISSIONS,
        scopes,
        sessionId: null,
        name: clientId,
        credentialId: typeof claims.jti === 'string' ? claims.jti : null,
      };
    }
    const account = await activeUser(claims.sub, () => tokenInvalid('The user of this token is deactivated or deleted.'));
    if (sessionId && options.sessions) options.sessions.touch(sessionId);
    const { permissions, tenant } = await tenantPermissions(account.id, tenantId);
    return {
      kind: 'user',
      subject: account.id,
      userId: account.id,
      clientId,
      organizationId: tenant,
      permissions,
      scopes,
      sessionId,
      name: `${account.firstName} ${account.lastName}`.trim(),
      credentialId: typeof claims.jti === 'string' ? claims.jti : null,
    };
  }

  async function resolveApiKey(rawKey: string, tenantId: string | null): Promise<Principal | null> {
    if (!options.apiKeys || !rawKey.startsWith('sk_live_')) return null;
    const key = found(await apiKeys.getOrLoad(rawKey, async () => orMissing(await options.apiKeys?.findByKey(rawKey))));
    const now = clock.now();
    if (!key || key.revokedAt !== null || hasExpired(key.expiresAt, now)) return null;
    if (tenantId !== null && tenantId !== key.organizationId) {
      throw new ProblemError('Tenant.Forbidden', "X-Tenant-Id names another organization than the API key's.");
    }
    const account = await user(key.userId);
    if (account?.status !== 'active') return null;
    const found2 = await membership(key.userId, key.organizationId);
    if (found2?.status !== 'active' || found2.organizationStatus !== 'active') return null;
    const held = expandRoles(found2.roles, found2.customRoles);
    const permissions = new Set([...permissionsForScopes(key.scopes)].filter((permission) => held.has(permission)));
    options.apiKeys.markUsed?.(key.id);
    return {
      kind: 'apiKey',
      subject: account.id,
      userId: account.id,
      clientId: null,
      organizationId: key.organizationId,
      permissions,
      scopes: new Set(key.scopes),
      sessionId: null,
      name: `${account.firstName} ${account.lastName}`.trim(),
      credentialId: key.id,
    };
  }

  async function resolveSession(cookieValue: string, tenantId: string | null): Promise<Principal | null> {
    if (!options.sessions) return null;
    const session = found(
      await sessions.getOrLoad(cookieValue, async () => orMissing(await options.sessions?.findByCookie(cookieValue))),
    );
    if (!session || session.revokedAt !== null || hasExpired(session.expiresAt, clock.now())) return null;
    if ((await watermark('session', session.id)) > 0) return null;
    const account = await user(session.userId);
    if (account?.status !== 'active') return null;
    options.sessions.touch(session.id);
    const { permissions, tenant } = await tenantPermissions(account.id, tenantId);
    return {
      kind: 'user',
      subject: account.id,
      userId: account.id,
      clientId: null,
      organizationId: tenant,
      permissions,
      scopes: new Set(),
      sessionId: session.id,
      name: `${account.firstName} ${account.lastName}`.trim(),
      credentialId: null,
    };
  }

  return {
    resolveToken,
    resolveApiKey,
    resolveSession,
    async permissionsOf(userId, organizationId) {
      const found3 = await membership(userId, organizationId);
      if (found3?.status !== 'active' || found3.organizationStatus !== 'active') return new Set();
      return expandRoles(found3.roles, found3.customRoles);
    },
  };
}
