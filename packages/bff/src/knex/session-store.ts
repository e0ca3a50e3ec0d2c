import { setTimeout as delay } from 'node:timers/promises';
import { type Clock, createSecretBox, randomToken, type SecretBox, sha256Hex, systemClock } from '@idt/core';
import { toIso } from '@idt/core/knex';
import type { Knex } from 'knex';
import type { CookieKeyring } from '../config.js';
import { createKeyedMutex, RefreshLockTimeoutError } from '../sessions/mutex.js';
import type { BffSession, BffSessionStore, BffUser } from '../sessions/store.js';
import { BFF_SESSIONS_TABLE } from './migrations.js';

/** The purpose the at-rest key is derived for (separate from the cookie seal keys). */
const SEAL_PURPOSE = 'idt-bff-session-tokens';

/** Options of {@link createKnexBffSessionStore}. */
export interface KnexBffSessionStoreOptions {
  /** A database on which {@link bffMigrations} ran. */
  readonly db: Knex;
  /**
   * The secrets tokens are sealed with at rest: the BFF's cookie key ring
   * (`config.cookie.keyring`; the current key seals, every key opens, and a
   * refresh re-seals under the current key) or one secret of at least 32
   * characters.
   */
  readonly secrets: CookieKeyring | string;
  /** The clock refresh leases are stamped with (the system clock by default). */
  readonly clock?: Clock;
  /** How long a refresh lease lasts before another instance may take it over (10 s). */
  readonly lockLeaseMs?: number;
  /** How long a caller waits for another instance's lease before giving up (15 s). */
  readonly lockWaitMs?: number;
  /** How often a waiting caller looks again (25 ms). */
  readonly lockPollMs?: number;
}

interface SessionRow {
  id_hash: string;
  sub: string;
  sid: string | null;
  user_data: string;
  secrets: string;
  key_id: string;
  access_token_expires_at: unknown;
  created_at: unknown;
  expires_at: unknown;
}

interface SealedSecrets {
  readonly accessToken: string;
  readonly refreshToken: string | null;
  readonly idToken: string | null;
  readonly csrfToken: string;
}

const iso = (ms: number) => new Date(ms).toISOString();
const epoch = (value: unknown) => Date.parse(toIso(value));

/**
 * The knex {@link BffSessionStore} (SQLite, Postgres), for one or several
 * BFF instances sharing a database.
 *
 * - Rows are keyed by SHA-256 of the session id: the id is a bearer secret,
 *   so reading the table yields no cookie that works.
 * - Access, refresh and ID tokens and the CSRF token are sealed
 *   (AES-256-GCM, bound to the row) under a key derived from the cookie
 *   secret; `key_id` names which one.
 * - The refresh lock is a lease on the row: a compare-and-set `UPDATE ...
 *   WHERE lock_until IS NULL OR lock_until < now` takes it for
 *   {@link KnexBffSessionStoreOptions.lockLeaseMs}; other instances poll
 *   until it is released or lapses, at most
 *   {@link KnexBffSessionStoreOptions.lockWaitMs}, then fail with
 *   {@link RefreshLockTimeoutError}. Within one process callers queue first,
 *   so only one of them polls the database.
 *
 * The `store` option of `createBff` hands its factory `{ config, clock }`
 * (`BffStoreContext` of `@idt/bff`): the cookie key ring seals tokens at
 * rest, and the clock stamps refresh leases.
 *
 * @example
 * import { createBff } from '@idt/bff';
 * import { bffMigrations, createKnexBffSessionStore } from '@idt/bff/knex';
 * import { createDatabase, runMigrations } from '@idt/core/knex';
 *
 * const db = createDatabase('postgres://bff@db.internal/bff');
 * await runMigrations(db, [bffMigrations]);
 * const bff = await createBff({
 *   env: process.env,
 *   store: ({ config, clock }) => createKnexBffSessionStore({ db, secrets: config.cookie.keyring, clock }),
 * });
 */
export function createKnexBffSessionStore(options: KnexBffSessionStoreOptions): BffSessionStore {
  const { db } = options;
  const clock = options.clock ?? systemClock;
  const leaseMs = options.lockLeaseMs ?? 10_000;
  const waitMs = options.lockWaitMs ?? 15_000;
  const pollMs = options.lockPollMs ?? 25;
  const keyring: CookieKeyring =
    typeof options.secrets === 'string'
      ? { currentKeyId: 'default', secrets: new Map([['default', options.secrets]]) }
      : options.secrets;
  const boxes = new Map<string, SecretBox>();
  for (const [id, secret] of keyring.secrets) boxes.set(id, createSecretBox(secret, SEAL_PURPOSE));
  const found = boxes.get(keyring.currentKeyId);
  if (!found) throw new TypeError(`The key ring has no secret for its current key id "${keyring.currentKeyId}"`);
  const currentBox: SecretBox = found;
  const mutex = createKeyedMutex();
  const table = () => db(BFF_SESSIONS_TABLE);

  function sealed(session: BffSession, idHash: string) {
    const secrets: SealedSecrets = {
      accessToken: session.accessToken,
      refreshToken: session.refreshToken,
      idToken: session.idToken,
      csrfToken: session.csrfToken,
    };
    return {
      secrets: currentBox.seal(JSON.stringify(secrets), idHash),
      key_id: keyring.currentKeyId,
      user_data: JSON.stringify({
        name: session.user.name,
        email: session.user.email,
        orgId: session.user.orgId,
        orgName: session.user.orgName,
        roles: session.user.roles,
      }),
      sub: session.user.sub,
      sid: session.sid,
      access_token_expires_at: iso(session.accessTokenExpiresAt),
    };
  }

  function fromRow(id: string, row: SessionRow): BffSession | undefined {
    const box = boxes.get(row.key_id);
    if (!box) return undefined;
    let secrets: SealedSecrets;
    try {
      secrets = JSON.parse(box.open(row.secrets, row.id_hash)) as SealedSecrets;
    } catch {
      // Sealed under a secret no longer configured, or altered: the session cannot be used.
      return undefined;
    }
    const user = JSON.parse(row.user_data) as Omit<BffUser, 'sub'>;
    return {
      id,
      user: {
        sub: row.sub,
        name: user.name ?? null,
        email: user.email ?? null,
        orgId: user.orgId ?? null,
        orgName: user.orgName ?? null,
        roles: user.roles ?? [],
      },
      sid: row.sid,
      accessToken: secrets.accessToken,
      accessTokenExpiresAt: epoch(row.access_token_expires_at),
      refreshToken: secrets.refreshToken,
      idToken: secrets.idToken,
      csrfToken: secrets.csrfToken,
      createdAt: epoch(row.created_at),
      expiresAt: epoch(row.expires_at),
    };
  }

  async function acquire(idHash: string): Promise<string | undefined> {
    const owner = randomToken(16);
    const started = Date.now();
    for (;;) {
      const now = clock.now().getTime();
      const taken = await table()
        .where({ id_hash: idHash })
        .andWhere((q) => q.whereNull('lock_until').orWhere('lock_until', '<', iso(now)))
        .update({ lock_owner: owner, lock_until: iso(now + leaseMs) });
      if (taken === 1) return owner;
      // No row: nothing to refresh, and `fn` will find the session gone.
      if (!(await table().where({ id_hash: idHash }).first('id_hash'))) return undefined;
      const waited = Date.now() - started;
      if (waited >= waitMs) throw new RefreshLockTimeoutError(waited);
      // Waiting on another instance's network call: real time, not the injected clock.
      await delay(pollMs);
    }
  }

  return {
    async create(session) {
      const idHash = sha256Hex(session.id);
      await table().insert({
        id_hash: idHash,
        ...sealed(session, idHash),
        created_at: iso(session.createdAt),
        expires_at: iso(session.expiresAt),
        lock_owner: null,
        lock_until: null,
      });
    },
    async read(id, now) {
      const row = (await table()
        .where({ id_hash: sha256Hex(id) })
        .andWhere('expires_at', '>', iso(now))
        .first()) as SessionRow | undefined;
      return row ? fromRow(id, row) : undefined;
    },
    async update(session) {
      const idHash = sha256Hex(session.id);
      const updated = await table().where({ id_hash: idHash }).update(sealed(session, idHash));
      return updated > 0;
    },
    async destroy(id) {
      return (
        (await table()
          .where({ id_hash: sha256Hex(id) })
          .delete()) > 0
      );
    },
    async revokeBySid(sid) {
      return table().where({ sid }).delete();
    },
    async revokeBySubject(sub) {
      return table().where({ sub }).delete();
    },
    withRefreshLock(id, fn) {
      const idHash = sha256Hex(id);
      return mutex.run(idHash, async () => {
        const owner = await acquire(idHash);
        try {
          return await fn();
        } finally {
          if (owner !== undefined) {
            await table().where({ id_hash: idHash, lock_owner: owner }).update({ lock_owner: null, lock_until: null });
          }
        }
      });
    },
    async prune(now) {
      return table().where('expires_at', '<=', iso(now)).delete();
    },
  };
}
