import { type Clock, createTtlCache, sha256Hex, systemClock } from '@idt/core';
import {
  type CacheInvalidator,
  dialectOf,
  evictFrom,
  runStatement,
  runStatementsTogether,
  type StatementBinding,
  selectRows,
  toIso,
} from '@idt/core/knex';
import { CacheNamespaces } from '@idt/identity';
import type { Knex } from 'knex';
import { CLIENT_CACHE_IDLE_MS, CLIENT_CACHE_JITTER, CLIENT_CACHE_MAX, CLIENT_CACHE_TTL_MS } from '../clients/cache.js';
import type { StoredClient } from '../clients/store.js';
import type { AdapterPayload, OidcAdapter } from '../provider/store.js';

export type { AdapterPayload, OidcAdapter } from '../provider/store.js';

/** Options of {@link createKnexAdapterClass}. */
export interface KnexAdapterOptions {
  readonly db: Knex;
  /** Loads a client record; suspended and missing clients are not found. */
  readonly findClient: (clientId: string) => Promise<StoredClient | undefined>;
  /** Turns a client record into oidc-provider client metadata. */
  readonly clientMetadata: (client: StoredClient) => Record<string, unknown>;
  readonly invalidator: CacheInvalidator;
  readonly clock?: Clock;
  /** The greatest age of a cached client lookup; 10 minutes by default (evicted on change, and a minute after its last use). */
  readonly clientCacheTtlMs?: number;
  /**
   * Set when the provider keeps the client instances it builds from the
   * metadata (idt's provider does, per client id until the client changes):
   * the adapter then remembers only the ids that do not exist, rather than a
   * second copy of every busy client's metadata beside its instance.
   */
  readonly providerKeepsClients?: boolean;
  /**
   * The request oidc-provider is serving (its `Provider.ctx`), or `undefined`
   * outside one. With it, reading a code or a refresh token also reads its
   * grant in the same statement, for the provider's read of that grant later
   * in the same request: one round trip instead of two.
   */
  readonly currentRequest?: () => object | undefined;
  /**
   * With {@link currentRequest}: a code or refresh token consumed during a
   * request is written with the request's next write through the adapter
   * (the successor refresh token a rotation saves right after), as one
   * statement on PostgreSQL and one transaction on SQLite, rather than as
   * a write of its own. Any other call of the adapter writes it first. The
   * host must call the class's `settle(request)` before the request's
   * answer leaves, which writes a consumption nothing followed (idt's
   * provider middleware does).
   */
  readonly deferConsumption?: boolean;
}

/** The adapter class {@link createKnexAdapterClass} makes. */
export interface KnexAdapterClass {
  new (name: string): OidcAdapter;
  /**
   * Writes the consumptions a request left pending (see
   * {@link KnexAdapterOptions.deferConsumption}); resolves at once when
   * there are none. Call it before the request's answer leaves.
   */
  settle(request: object): Promise<void>;
}

/**
 * Models whose ids are bearer credentials: only their SHA-256 is stored, and
 * the payload is stored without its `jti`, so the table holds no usable code
 * or refresh token.
 */
const HASHED_MODELS = new Set(['AuthorizationCode', 'RefreshToken', 'DeviceCode', 'BackchannelAuthenticationRequest']);

/**
 * The models whose rows are looked up by account (a user's sessions and
 * grants), by client (a client's grants) and by session id (the provider's
 * sessions, at logout and eviction). Only their rows fill the `account_id`,
 * `client_id` and `session_id` columns, so those partial indexes hold no
 * entry for a code or a refresh token: their owner and session are in the
 * payload, and they are found through their grant (`grant_id`), without
 * which the provider refuses them anyway.
 */
const ACCOUNT_MODELS = new Set(['Session', 'Grant']);
const CLIENT_MODELS = new Set(['Grant']);
const SESSION_MODELS = new Set(['Session']);
/** Models whose row names a grant that the provider reads next, in the same request (the code and refresh grants). */
const GRANT_HOLDERS = new Set(['AuthorizationCode', 'RefreshToken']);

/** What `settle` answers for a request with nothing pending. */
const SETTLED: Promise<void> = Promise.resolve();

/** A code's or refresh token's consumption: only the first sets the time. */
const CONSUME_SQL = 'update oidc_payloads set consumed_at = ? where model = ? and id = ? and consumed_at is null';
/** A payload's write; a rewrite of a consumed code or token stays consumed. */
const UPSERT_SQL =
  'insert into oidc_payloads (model, id, payload, grant_id, uid, user_code, account_id, client_id, session_id, expires_at, consumed_at) ' +
  'values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, null) on conflict (model, id) do update set payload = excluded.payload, ' +
  'grant_id = excluded.grant_id, uid = excluded.uid, user_code = excluded.user_code, account_id = excluded.account_id, ' +
  'client_id = excluded.client_id, session_id = excluded.session_id, expires_at = excluded.expires_at';

/**
 * The statements of the provider's hot paths, written once and run by
 * `selectRows`/`runStatement`, past knex's builder and runner (which cost
 * 10–20 µs a call on a slow core): a refresh grant runs two of these (its
 * read, then its consumption and successor together), a sign-in about
 * twenty. Both engines take the same SQL; knex turns each `?` into `$n` for
 * PostgreSQL.
 */
const PAYLOAD_SQL = {
  find: 'select payload, expires_at, consumed_at from oidc_payloads where model = ? and id = ? limit 1',
  /** A code or refresh token with its grant's row, when there is one (both by primary key). */
  findWithGrant:
    'select t.payload, t.expires_at, t.consumed_at, t.grant_id, g.payload, g.expires_at, g.consumed_at ' +
    "from oidc_payloads as t left join oidc_payloads as g on g.model = 'Grant' and g.id = t.grant_id " +
    'where t.model = ? and t.id = ? limit 1',
  consume: CONSUME_SQL,
  destroy: 'delete from oidc_payloads where model = ? and id = ?',
  upsert: UPSERT_SQL,
  /**
   * PostgreSQL: a write and the consumption before it, in one statement
   * (the write's bindings first, then the consumption's three), for two
   * different rows. PostgreSQL runs the main statement first and the
   * `with` after it, which keeps the order they were called in: the
   * consumption, whose row then still finds room on its page for the
   * change (a HOT update, no new index entries), then the insert.
   */
  upsertAfterConsume: `with successor as (${UPSERT_SQL}) ${CONSUME_SQL}`,
} as const;

type PayloadRow = { payload: string; expires_at: unknown; consumed_at: unknown };

/** The payload, expiry and consumption columns of a selected row, from column `at` on (the order `PAYLOAD_SQL` selects them in). */
function payloadRow(row: readonly unknown[], at = 0): PayloadRow {
  return { payload: String(row[at]), expires_at: row[at + 1], consumed_at: row[at + 2] };
}

/**
 * Creates the oidc-provider adapter class on knex.
 *
 * - `Client` is served from the `oidc_clients` table (cached, evicted on change);
 *   suspended or deleted clients are not found, so they get `invalid_client`.
 * - Codes and refresh tokens are stored under the SHA-256 of their value.
 * - Consumption is atomic and keeps the first time (`UPDATE … WHERE
 *   consumed_at IS NULL`: exactly one concurrent caller sets it); a consumed
 *   row is reported with `consumed` set to that time in epoch seconds, to the
 *   millisecond. What a replay means is decided by the policy layer
 *   (`policy/refresh-rotation.ts`), not here.
 */
export function createKnexAdapterClass(options: KnexAdapterOptions): KnexAdapterClass {
  const { db } = options;
  const clock = options.clock ?? systemClock;
  // Evicted on every change of a client (any instance); the time limit only bounds a missed eviction.
  const clients = createTtlCache<Record<string, unknown> | null>({
    ttlMs: options.clientCacheTtlMs ?? CLIENT_CACHE_TTL_MS,
    idleMs: CLIENT_CACHE_IDLE_MS,
    jitter: CLIENT_CACHE_JITTER,
    max: CLIENT_CACHE_MAX,
  });
  options.invalidator.subscribe(CacheNamespaces.clients, evictFrom(clients));

  /**
   * Grant rows read with a code or refresh token, per request, by grant id
   * (`null`: the token named a grant that is gone). Each is handed out once,
   * to the next `find` of that grant in the same request, and dropped when
   * the request writes or revokes the grant through the adapter. A request's
   * entries go with the request. Between the two reads the provider only
   * checks the token (client, expiry, PKCE, replay, which revokes through
   * the adapter); nothing else of idt's deletes a grant's rows in between.
   */
  const prefetchedGrants = new WeakMap<object, Map<string, PayloadRow | null>>();
  const forgetPrefetchedGrant = (grantId: string) => {
    const request = options.currentRequest?.();
    if (request) prefetchedGrants.get(request)?.delete(grantId);
  };

  /**
   * Consumptions not written yet (`deferConsumption`), per request, in
   * order: the bindings of {@link CONSUME_SQL}. Taken by the request's next
   * call of the adapter, or by `settle`.
   */
  const pendingConsumptions = new WeakMap<object, StatementBinding[][]>();
  const deferring = options.deferConsumption === true && options.currentRequest !== undefined;
  const takePending = (request: object | undefined): StatementBinding[][] | undefined => {
    const pending = request ? pendingConsumptions.get(request) : undefined;
    if (pending) pendingConsumptions.delete(request as object);
    return pending;
  };
  const writeConsumptions = async (pending: StatementBinding[][]): Promise<void> => {
    if (pending.length === 1) await runStatement(db, CONSUME_SQL, pending[0] as StatementBinding[]);
    else
      await runStatementsTogether(
        db,
        pending.map((bindings) => [CONSUME_SQL, bindings] as const),
      );
  };
  /** Writes what `request` consumed that nothing carried yet; `undefined` (no promise) when there is nothing. */
  const writePendingOf = (request: object | undefined): Promise<void> | undefined => {
    const pending = takePending(request);
    return pending ? writeConsumptions(pending) : undefined;
  };
  /** Before a call that reads or changes the table: what this request consumed is written first, as it was called. */
  const writePending = (): Promise<void> | undefined => (deferring ? writePendingOf(options.currentRequest?.()) : undefined);

  const sessionIdOf = (payload: AdapterPayload): string | null => {
    if (typeof payload.sid === 'string') return payload.sid;
    for (const authorization of Object.values(payload.authorizations ?? {})) {
      if (typeof authorization?.sid === 'string') return authorization.sid;
    }
    return null;
  };

  class KnexAdapter implements OidcAdapter {
    readonly model: string;
    readonly hashed: boolean;
    readonly byAccount: boolean;
    readonly byClient: boolean;
    readonly bySession: boolean;

    constructor(model: string) {
      this.model = model;
      this.hashed = HASHED_MODELS.has(model);
      this.byAccount = ACCOUNT_MODELS.has(model);
      this.byClient = CLIENT_MODELS.has(model);
      this.bySession = SESSION_MODELS.has(model);
    }

    key(id: string): string {
      return this.hashed ? sha256Hex(id) : id;
    }

    async upsert(id: string, payload: AdapterPayload, expiresIn?: number): Promise<void> {
      if (this.model === 'Client') throw new Error('Clients are managed through the clients API');
      if (this.model === 'Grant') forgetPrefetchedGrant(id);
      const stored = { ...payload };
      if (this.hashed) delete stored.jti;
      delete stored.consumed;
      const key = this.key(id);
      // An upsert that keeps `consumed_at`: a rewrite of a consumed code or token stays consumed.
      const bindings: StatementBinding[] = [
        this.model,
        key,
        JSON.stringify(stored),
        payload.grantId ?? (this.model === 'Grant' ? id : null),
        payload.uid ?? null,
        payload.userCode ?? null,
        this.byAccount ? (payload.accountId ?? null) : null,
        this.byClient ? (payload.clientId ?? null) : null,
        this.bySession ? sessionIdOf(payload) : null,
        expiresIn ? new Date(clock.now().getTime() + expiresIn * 1000).toISOString() : null,
      ];
      const pending = deferring ? takePending(options.currentRequest?.()) : undefined;
      if (!pending) {
        await runStatement(db, PAYLOAD_SQL.upsert, bindings);
        return;
      }
      // The consumptions and this write commit together, or neither does (the token can then be redeemed again).
      const [only, ...more] = pending;
      if (only && !more.length && dialectOf(db) === 'postgres' && !(only[1] === this.model && only[2] === key)) {
        await runStatement(db, PAYLOAD_SQL.upsertAfterConsume, [...bindings, ...only]);
        return;
      }
      await runStatementsTogether(db, [
        ...pending.map((consumption) => [CONSUME_SQL, consumption] as const),
        [PAYLOAD_SQL.upsert, bindings] as const,
      ]);
    }

    async find(id: string): Promise<AdapterPayload | undefined> {
      if (this.model === 'Client') return this.findClient(id);
      const request = options.currentRequest?.();
      if (request && this.model === 'Grant') {
        const grants = prefetchedGrants.get(request);
        if (grants?.has(id)) {
          // Read with the code or token, before its consumption: a pending one need not be written for it.
          const prefetched = grants.get(id);
          grants.delete(id);
          return prefetched ? this.toPayload(id, prefetched) : undefined;
        }
      }
      if (deferring) await writePendingOf(request);
      if (request && GRANT_HOLDERS.has(this.model)) return this.findWithGrant(id, request);
      const [row] = await selectRows(db, PAYLOAD_SQL.find, [this.model, this.key(id)]);
      return row ? this.toPayload(id, payloadRow(row)) : undefined;
    }

    /** A code or refresh token, with its grant's row kept for the request's next read of that grant. */
    async findWithGrant(id: string, request: object): Promise<AdapterPayload | undefined> {
      const [row] = await selectRows(db, PAYLOAD_SQL.findWithGrant, [this.model, this.key(id)]);
      if (!row) return undefined;
      // The token's three columns, its grant id, then the grant's three columns (none when the grant is gone).
      const grantId = row[3];
      if (typeof grantId === 'string') {
        let grants = prefetchedGrants.get(request);
        if (!grants) {
          grants = new Map();
          prefetchedGrants.set(request, grants);
        }
        grants.set(grantId, row[4] === null || row[4] === undefined ? null : payloadRow(row, 4));
      }
      return this.toPayload(id, payloadRow(row));
    }

    async findClient(id: string): Promise<AdapterPayload | undefined> {
      const metadata = await clients.getOrLoad(id, async () => {
        const client = await options.findClient(id);
        return client && client.status === 'active' ? options.clientMetadata(client) : null;
      });
      if (!metadata) return undefined;
      // The provider keeps what it built from them: only unknown ids need remembering here.
      if (options.providerKeepsClients) clients.delete(id);
      return { ...metadata };
    }

    toPayload(id: string, row: PayloadRow): AdapterPayload | undefined {
      if (row.expires_at !== null && new Date(toIso(row.expires_at)).getTime() <= clock.now().getTime()) return undefined;
      const payload = JSON.parse(row.payload) as AdapterPayload;
      if (this.hashed) payload.jti = id;
      if (row.consumed_at !== null && row.consumed_at !== undefined) {
        payload.consumed = new Date(toIso(row.consumed_at)).getTime() / 1000;
      }
      return payload;
    }

    async findByUid(uid: string): Promise<AdapterPayload | undefined> {
      await writePending();
      const row = await db('oidc_payloads').where({ model: this.model, uid }).first();
      return row ? this.toPayload(row.id, row) : undefined;
    }

    async findByUserCode(userCode: string): Promise<AdapterPayload | undefined> {
      await writePending();
      const row = await db('oidc_payloads').where({ model: this.model, user_code: userCode }).first();
      return row ? this.toPayload(row.id, row) : undefined;
    }

    async consume(id: string): Promise<void> {
      // Only the first consumption sets the time: the leeway runs from the first redemption.
      const bindings: StatementBinding[] = [clock.now().toISOString(), this.model, this.key(id)];
      const request = deferring ? options.currentRequest?.() : undefined;
      if (!request) {
        await runStatement(db, PAYLOAD_SQL.consume, bindings);
        return;
      }
      const pending = pendingConsumptions.get(request);
      if (pending) pending.push(bindings);
      else pendingConsumptions.set(request, [bindings]);
    }

    async destroy(id: string): Promise<void> {
      if (this.model === 'Grant') forgetPrefetchedGrant(id);
      await writePending();
      await runStatement(db, PAYLOAD_SQL.destroy, [this.model, this.key(id)]);
    }

    async revokeByGrantId(grantId: string): Promise<void> {
      forgetPrefetchedGrant(grantId);
      await writePending();
      await db('oidc_payloads').where({ grant_id: grantId }).delete();
    }

    static settle(request: object): Promise<void> {
      // Every answered request of the provider comes here; most have nothing pending.
      return writePendingOf(request) ?? SETTLED;
    }
  }

  return KnexAdapter;
}

/** Deletes expired rows of the adapter table; returns how many. */
export function pruneAdapterPayloads(db: Knex, now: Date): Promise<number> {
  return db('oidc_payloads').whereNotNull('expires_at').andWhere('expires_at', '<=', now.toISOString()).delete();
}
