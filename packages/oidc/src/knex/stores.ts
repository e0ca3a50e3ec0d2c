import { createTtlCache } from '@idt/core';
import { ALL_KEYS, type CacheInvalidator, dialectOf, runStatement, selectRows, toIso, toIsoOrNull } from '@idt/core/knex';
import type { Knex } from 'knex';
import type { ConsentStore, GrantContextStore } from '../interactions/stores.js';
import {
  type ClientLockoutPolicy,
  type ClientLockoutPolicyOptions,
  type ClientLockoutRow,
  type ClientLockoutStore,
  createClientLockout,
} from '../policy/client-lockout.js';
import type { GrantContext } from '../provider/create-provider.js';

/** The consent read of every authorization, written once (see `selectRows`). */
const FIND_CONSENT_SQL = 'select scopes from oidc_consents where user_id = ? and client_id = ? limit 1';
/** The grant context written with every grant; a grant's context never changes, so a second write keeps the first. */
const INSERT_GRANT_CONTEXT_SQL =
  'insert into oidc_grant_contexts (grant_id, organization_id, refresh_token_lifetime, created_at, expires_at) ' +
  'values (?, ?, ?, ?, ?) on conflict (grant_id) do nothing';

/** The knex {@link ConsentStore}. */
export function createKnexConsentStore(db: Knex): ConsentStore {
  return {
    async find(userId, clientId) {
      const [row] = await selectRows(db, FIND_CONSENT_SQL, [userId, clientId]);
      return row ? (JSON.parse(String(row[0])) as string[]) : undefined;
    },
    async remember(userId, clientId, scopes, at) {
      const postgres = dialectOf(db) === 'postgres';
      const mergeOf = (row: { scopes: string } | undefined) =>
        [...new Set([...(row ? (JSON.parse(row.scopes) as string[]) : []), ...scopes])].sort();
      await db.transaction(async (trx) => {
        const read = () => trx('oidc_consents').where({ user_id: userId, client_id: clientId }).first('scopes');
        // Concurrent remembers of one consent add up: the row stays locked until this merge is written
        // (SQLite runs one write transaction at a time).
        const row = await (postgres ? read().forUpdate() : read());
        const merged = mergeOf(row);
        const insert = trx('oidc_consents').insert({
          user_id: userId,
          client_id: clientId,
          scopes: JSON.stringify(merged),
          created_at: at.toISOString(),
          updated_at: at.toISOString(),
        });
        if (postgres && !row) {
          // No row to lock yet: of two first remembers, one inserts; the other merges with its row.
          const inserted = await insert.onConflict(['user_id', 'client_id']).ignore().returning('user_id');
          if (inserted.length > 0) return;
          const merging = mergeOf(await read().forUpdate());
          await trx('oidc_consents')
            .where({ user_id: userId, client_id: clientId })
            .update({ scopes: JSON.stringify(merging), updated_at: at.toISOString() });
          return;
        }
        await insert.onConflict(['user_id', 'client_id']).merge({ scopes: JSON.stringify(merged), updated_at: at.toISOString() });
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
      await runStatement(db, INSERT_GRANT_CONTEXT_SQL, [
        grantId,
        context.organizationId,
        context.refreshTokenLifetime,
        new Date().toISOString(),
        expiresAt.toISOString(),
      ]);
      cache.set(grantId, context);
    },
    cached(grantId) {
      return cache.get(grantId) ?? undefined;
    },
  };
}

/** Locks written (cache-invalidation namespace, keyed by client id). */
const LOCKOUT_NAMESPACE = 'oidc.client-lockout';
/** Failures recorded: the next success of the client resets its count, on whichever instance. */
const FAILURES_NAMESPACE = 'oidc.client-failures';

/** The failures and locks of registered clients, on knex (see `policy/client-lockout.ts`). */
export function createKnexClientLockoutStore(db: Knex, invalidator: CacheInvalidator): ClientLockoutStore {
  const toRow = (row: { client_id: string; locked_until: unknown; last_failure_at: unknown }): ClientLockoutRow => {
    const lockedUntil = toIsoOrNull(row.locked_until);
    const lastFailureAt = toIsoOrNull(row.last_failure_at);
    return {
      clientId: row.client_id,
      lockedUntil: lockedUntil ? new Date(lockedUntil) : undefined,
      lastFailureAt: lastFailureAt ? new Date(lastFailureAt) : undefined,
    };
  };
  return {
    async isRegistered(clientId) {
      return Boolean(await db('oidc_clients').where({ client_id: clientId }).first('client_id'));
    },
    async addFailure(clientId, at) {
      await db.transaction(async (trx) => {
        await trx('oidc_client_auth_failures')
          .insert({ client_id: clientId, total: 1, last_failure_at: at.toISOString(), locked_until: null })
          .onConflict('client_id')
          .merge({ total: trx.raw('oidc_client_auth_failures.total + 1'), last_failure_at: at.toISOString() });
        await invalidator.invalidate(FAILURES_NAMESPACE, clientId, trx);
      });
    },
    async lock(clientId, until) {
      await db.transaction(async (trx) => {
        await trx('oidc_client_auth_failures').where({ client_id: clientId }).update({ locked_until: until.toISOString() });
        await invalidator.invalidate(LOCKOUT_NAMESPACE, clientId, trx);
      });
    },
    async find(clientId) {
      const row = await db('oidc_client_auth_failures')
        .where({ client_id: clientId })
        .first('client_id', 'locked_until', 'last_failure_at');
      return row ? toRow(row) : undefined;
    },
    async recent(now, failedSince) {
      const rows = await db('oidc_client_auth_failures')
        .where('locked_until', '>', now.toISOString())
        .orWhere('last_failure_at', '>', failedSince.toISOString())
        .select('client_id', 'locked_until', 'last_failure_at');
      return rows.map(toRow);
    },
    subscribe(listener) {
      const locks = invalidator.subscribe(LOCKOUT_NAMESPACE, (key) =>
        listener(key === ALL_KEYS ? { kind: 'unknown' } : { kind: 'locked', clientId: key }),
      );
      // Missed failures are read again with everything else on the lock namespace's wildcard.
      const failures = invalidator.subscribe(FAILURES_NAMESPACE, (key) => {
        if (key !== ALL_KEYS) listener({ kind: 'failed', clientId: key });
      });
      return () => {
        locks();
        failures();
      };
    },
  };
}

/** Options of {@link createKnexClientLockout}. */
export interface ClientLockoutOptions extends Omit<ClientLockoutPolicyOptions, 'store'> {
  readonly db: Knex;
  readonly invalidator: CacheInvalidator;
}

/** The invalid-client lockout on knex, with what it keeps in memory. */
export type KnexClientLockout = ClientLockoutPolicy;

/**
 * The invalid-client lockout policy (`createClientLockout`) over
 * {@link createKnexClientLockoutStore}: the composition hosts and tests use.
 */
export function createKnexClientLockout(options: ClientLockoutOptions): KnexClientLockout {
  const { db, invalidator, ...policy } = options;
  return createClientLockout({ ...policy, store: createKnexClientLockoutStore(db, invalidator) });
}
