import { type Clock, sha256Hex, systemClock } from '@idt/core';
import { rawRows, toIso } from '@idt/core/knex';
import type { Knex } from 'knex';
import type { ReplayCache } from '../saml/replay-cache.js';
import type { PendingSamlRequest, RequestCache } from '../saml/request-cache.js';
import { SSO_SAML_REPLAYS_TABLE, SSO_SAML_REQUESTS_TABLE } from './migrations.js';

/** Options of the knex SAML caches. */
export interface KnexSamlCacheOptions {
  readonly db: Knex;
  /** What "expired" is measured against; the system clock by default. */
  readonly clock?: Clock;
}

/**
 * A {@link ReplayCache} in `sso_saml_replays`, shared by every instance on
 * the database. A key is remembered by one `INSERT … ON CONFLICT DO
 * NOTHING`: of concurrent callers with the same key exactly one inserts the
 * row and gets `true`. An expired row is deleted first, so its key can be
 * remembered again.
 *
 * @example
 * const replayCache = createKnexReplayCache({ db, clock });
 */
export function createKnexReplayCache(options: KnexSamlCacheOptions): ReplayCache {
  const { db } = options;
  const clock = options.clock ?? systemClock;
  return {
    async remember(key, expiresAt) {
      const hashed = sha256Hex(key);
      await db(SSO_SAML_REPLAYS_TABLE).where({ key: hashed }).andWhere('expires_at', '<=', clock.now().toISOString()).delete();
      const inserted = await db(SSO_SAML_REPLAYS_TABLE)
        .insert({ key: hashed, expires_at: expiresAt.toISOString() })
        .onConflict('key')
        .ignore()
        .returning('key');
      return inserted.length > 0;
    },
  };
}

/**
 * A {@link RequestCache} in `sso_saml_requests`. `take` deletes the row in
 * one statement (`DELETE … WHERE key = ? AND expires_at > now RETURNING`),
 * so exactly one concurrent caller gets the request.
 *
 * @example
 * const requestCache = createKnexRequestCache({ db, clock });
 */
export function createKnexRequestCache(options: KnexSamlCacheOptions): RequestCache {
  const { db } = options;
  const clock = options.clock ?? systemClock;
  return {
    async save(key, request) {
      await db(SSO_SAML_REQUESTS_TABLE)
        .insert({ key: sha256Hex(key), relay_state: request.relayState ?? null, expires_at: request.expiresAt.toISOString() })
        .onConflict('key')
        .merge();
    },
    async take(key) {
      // Raw, since knex drops RETURNING from a SQLite delete; both engines run this statement.
      const rows = rawRows<Record<string, unknown>>(
        await db.raw(
          `DELETE FROM ${SSO_SAML_REQUESTS_TABLE} WHERE key = ? AND expires_at > ? RETURNING relay_state, expires_at`,
          [sha256Hex(key), clock.now().toISOString()],
        ),
      );
      const row = rows[0];
      if (!row) return undefined;
      const request: PendingSamlRequest = {
        expiresAt: new Date(toIso(row.expires_at)),
        ...(row.relay_state ? { relayState: String(row.relay_state) } : {}),
      };
      return request;
    },
  };
}

/**
 * Deletes expired rows of both SAML caches; the module runs it as the job
 * `sso.saml-caches.prune`. Returns how many rows went.
 */
export async function pruneSamlCaches(db: Knex, now: Date): Promise<number> {
  const at = now.toISOString();
  const replays = await db(SSO_SAML_REPLAYS_TABLE).where('expires_at', '<=', at).delete();
  const requests = await db(SSO_SAML_REQUESTS_TABLE).where('expires_at', '<=', at).delete();
  return replays + requests;
}
