import { type Clock, createTtlCache, type Logger, silentLogger, systemClock } from '@idt/core';
import { type CacheInvalidator, toIso, toIsoOrNull, type WindowCounter } from '@idt/core/knex';
import type { Knex } from 'knex';
import type { ConsentStore, GrantContextStore } from '../interactions/stores.js';
import type { GrantContext } from '../provider/create-provider.js';
import type { ClientLockout } from '../provider/middleware.js';

/** The knex {@link ConsentStore}. */
export function createKnexConsentStore(db: Knex): ConsentStore {
  return {
    async find(userId, clientId) {
      const row = await db('oidc_consents').where({ user_id: userId, client_id: clientId }).first('scopes');
      return row ? (JSON.parse(row.scopes) as string[]) : undefined;
    },
    async remember(userId, clientId, scopes, at) {
      await db.transaction(async (trx) => {
        const row = await trx('oidc_consents').where({ user_id: userId, client_id: clientId }).first('scopes');
        const merged = [...new Set([...(row ? (JSON.parse(row.scopes) as string[]) : []), ...scopes])].sort();
        await trx('oidc_consents')
          .insert({
            user_id: userId,
            client_id: clientId,
            scopes: JSON.stringify(merged),
            created_at: at.toISOString(),
            updated_at: at.toISOString(),
          })
          .onConflict(['user_id', 'client_id'])
          .merge({ scopes: JSON.stringify(merged), updated_at: at.toISOString() });
      });
    },
    async forget(userId, clientId) {
      return (await db('oidc_consents').where({ user_id: userId, client_id: clientId }).delete()) > 0;
    },
    async list(userId) {
      const rows = await db('oidc_consents').where({ user_id: userId }).orderBy('updated_at', 'desc');
      return rows.map((row: { client_id: string; scopes: string; updated_at: unknown }) => ({
        clientId: row.client_id,
        scopes: JSON.parse(row.scopes) as string[],
        updatedAt: toIso(row.updated_at),
      }));
    },
  };
}

/**
 * The knex {@link GrantContextStore}, with an in-memory cache: contexts never
 * change once written, so the cache needs no invalidation.
 */
export function createKnexGrantContextStore(db: Knex): GrantContextStore & { cached(grantId: string): GrantContext | undefined } {
  const cache = createTtlCache<GrantContext | null>({ ttlMs: 3_600_000, max: 50_000 });
  return {
    async get(grantId) {
      const value = await cache.getOrLoad(grantId, async () => {
        const row = await db('oidc_grant_contexts').where({ grant_id: grantId }).first();
        return row
          ? { organizationId: row.organization_id ?? null, refreshTokenLifetime: Number(row.refresh_token_lifetime) }
          : null;
      });
      return value ?? undefined;
    },
    async set(grantId, context, expiresAt) {
      await db('oidc_grant_contexts')
        .insert({
          grant_id: grantId,
          organization_id: context.organizationId,
          refresh_token_lifetime: context.refreshTokenLifetime,
          created_at: new Date().toISOString(),
          expires_at: expiresAt.toISOString(),
        })
        .onConflict('grant_id')
        .ignore();
      cache.set(grantId, context);
    },
    cached(grantId) {
      return cache.get(grantId) ?? undefined;
    },
  };
}

/** Options of {@link createKnexClientLockout}. */
export interface ClientLockoutOptions {
  readonly db: Knex;
  readonly counter: WindowCounter;
  readonly invalidator: CacheInvalidator;
  /** Failures that trip the lockout (5). */
  readonly maxFailures?: number;
  /** The window failures are counted in, in milliseconds (5 minutes). */
  readonly windowMs?: number;
  /** How long the lockout lasts, in milliseconds (5 minutes). */
  readonly lockoutMs?: number;
  /**
   * Most client ids that do not exist whose failures are counted in memory
   * ({@link UNKNOWN_CLIENT_LIMIT}); the least recently failing is forgotten first.
   */
  readonly unknownClientLimit?: number;
  readonly clock?: Clock;
  readonly logger?: Logger;
}

/** The invalid-client lockout on knex, with what it keeps in memory. */
export interface KnexClientLockout extends ClientLockout {
  /** Loads the lockouts in force from the database; call once at start. */
  load(): Promise<void>;
  /** How many unknown client ids are counted in memory now (at most `unknownClientLimit`). */
  unknownClientsTracked(): number;
}

/** Default bound of the in-memory failure counts of client ids that do not exist. */
export const UNKNOWN_CLIENT_LIMIT = 1_000;

/** Unknown client ids are kept in memory and logged cut to this many characters. */
const UNKNOWN_CLIENT_ID_LENGTH = 64;

const LOCKOUT_NAMESPACE = 'oidc.client-lockout';

/**
 * The invalid-client lockout (SPEC 8.2): 5 failures within 5 minutes lock
 * the client id for a fixed 5 minutes. Failures are counted in the database
 * (shared by every instance); the lock is known locally and spread by the
 * cache invalidator, so checking it on the token endpoint costs no I/O.
 *
 * Every invalid-client answer is logged as an audit line. Only client ids of
 * registered clients (rows of `oidc_clients`, whatever their status) are
 * counted in the database and added to their total in
 * `oidc_client_auth_failures`; so unauthenticated callers cannot grow any
 * table. Failures of client ids that do not exist are counted in memory
 * only, per instance, for at most `unknownClientLimit` ids (1,000 by
 * default, the least recently failing forgotten first, each id cut to 64
 * characters) until the id has been quiet for the failure window; their
 * audit line names the cut id with its recent count. No lockout applies to
 * them: they cannot authenticate anyway.
 */
export function createKnexClientLockout(options: ClientLockoutOptions): KnexClientLockout {
  const { db } = options;
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? silentLogger;
  const maxFailures = options.maxFailures ?? 5;
  const windowMs = options.windowMs ?? 300_000;
  const lockoutMs = options.lockoutMs ?? 300_000;
  const locks = new Map<string, number>();
  const unknownFailures = createTtlCache<number>({
    ttlMs: windowMs,
    max: options.unknownClientLimit ?? UNKNOWN_CLIENT_LIMIT,
    clock,
  });

  const refresh = async (clientId: string) => {
    const row = await db('oidc_client_auth_failures').where({ client_id: clientId }).first('locked_until');
    const until = row ? toIsoOrNull(row.locked_until) : null;
    if (until && new Date(until).getTime() > clock.now().getTime()) locks.set(clientId, new Date(until).getTime());
    else locks.delete(clientId);
  };
  options.invalidator.subscribe(LOCKOUT_NAMESPACE, (key) => {
    if (key === '*') void loadAll().catch(() => undefined);
    else void refresh(key).catch((error: unknown) => logger.warn('refreshing a client lockout failed', { error }));
  });

  async function loadAll() {
    const rows = await db('oidc_client_auth_failures')
      .where('locked_until', '>', clock.now().toISOString())
      .select('client_id', 'locked_until');
    locks.clear();
    for (const row of rows as Array<{ client_id: string; locked_until: unknown }>)
      locks.set(row.client_id, new Date(toIso(row.locked_until)).getTime());
  }

  function isLocked(clientId: string): boolean {
    const until = locks.get(clientId);
    if (until === undefined) return false;
    if (until <= clock.now().getTime()) {
      locks.delete(clientId);
      return false;
    }
    return true;
  }

  return {
    load: loadAll,
    isLocked,
    unknownClientsTracked: () => unknownFailures.size,
    async recordFailure(clientId, details) {
      const { ip, route, reason } = details;
      if (!(await db('oidc_clients').where({ client_id: clientId }).first('client_id'))) {
        const key = clientId.slice(0, UNKNOWN_CLIENT_ID_LENGTH);
        const failures = (unknownFailures.get(key) ?? 0) + 1;
        unknownFailures.set(key, failures);
        logger.warn('audit: invalid_client', { clientId: key, unknownClient: true, failures, ip, route, reason });
        return;
      }
      const now = clock.now();
      const locked = isLocked(clientId);
      logger.warn('audit: invalid_client', { clientId, ip, route, reason, locked });
      await db('oidc_client_auth_failures')
        .insert({ client_id: clientId, total: 1, last_failure_at: now.toISOString(), locked_until: null })
        .onConflict('client_id')
        .merge({ total: db.raw('oidc_client_auth_failures.total + 1'), last_failure_at: now.toISOString() });
      if (locked) return;
      // Counted outside any transaction: SQLite has one connection, and the counter uses it too.
      const decision = await options.counter.hit(`invalid-client:${clientId}`, maxFailures - 1, windowMs);
      if (decision.allowed) return;
      const until = new Date(now.getTime() + lockoutMs);
      await db.transaction(async (trx) => {
        await trx('oidc_client_auth_failures').where({ client_id: clientId }).update({ locked_until: until.toISOString() });
        await options.invalidator.invalidate(LOCKOUT_NAMESPACE, clientId, trx);
      });
      locks.set(clientId, until.getTime());
      await options.counter.reset(`invalid-client:${clientId}`);
      logger.warn('audit: client locked out', { clientId, until: until.toISOString() });
    },
    recordSuccess() {
      // Successful authentications do not reset the window: the lockout is a fixed count of failures.
    },
  };
}
