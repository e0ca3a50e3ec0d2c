import { dialectOf } from '@idt/core/knex';
import { caller, createTestIdt, indexDefinitions, mintAccessToken, seedWorld, type TestIdt, testDialects } from '@idt/testing';
import type { Knex } from 'knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/**
 * Every read the API's GET endpoints make must find its rows through an
 * index: a list or lookup that scans a whole table costs nothing on a test
 * database and seconds at 100,000 rows. The endpoints come from the API
 * document, so a new list is audited the day it is added.
 */

/** Tables that hold a handful of rows whatever the size of the deployment (settings, key material, migrations). */
const SMALL_TABLES = new Set([
  'core_signing_keys',
  'core_settings',
  'identity_setup_lock',
  'oidc_scopes',
  'platform_settings',
  'platform_feature_flags',
]);

interface Statement {
  readonly sql: string;
  readonly bindings: readonly Knex.RawBinding[];
  readonly path: string;
}

describe.each(testDialects())('query plans of the GET endpoints on %s', (dialect) => {
  let server: TestIdt;
  let statements: Statement[];
  let paths: string[];

  beforeAll(async () => {
    server = await createTestIdt({ dialect });
    const world = await seedWorld(server);
    const document = (await (await server.fetch('/openapi/v1.json')).json()) as {
      paths: Record<string, Record<string, unknown>>;
    };
    paths = Object.entries(document.paths)
      .filter(([path, operations]) => operations.get !== undefined && !path.includes('{'))
      .map(([path]) => path);
    const call = caller(server);
    const tokens = [
      world.a.tokens.owner,
      world.platformToken,
      await mintAccessToken(server, { sub: world.a.owner.id, org_id: world.a.organization.id, scope: 'openid profile' }),
    ];
    const prefix = new URL(server.url).pathname.replace(/\/$/, '');
    statements = [];
    let current = '';
    const capture = (query: { sql: string; bindings?: readonly Knex.RawBinding[] }) => {
      if (/^\s*(select|with)\b/i.test(query.sql))
        statements.push({ sql: query.sql, bindings: query.bindings ?? [], path: current });
    };
    // Warm the caches first (keys, clients, memberships), so that what is captured is each endpoint's own reads.
    for (const token of tokens) await call('GET', '/v1/identity/auth/whoami', { token });
    server.database.db.on('query', capture);
    try {
      for (const path of paths) {
        current = path;
        for (const token of tokens) {
          const response = await call('GET', `${path.slice(prefix.length) || path}?page=2&pageSize=5`, { token });
          await response.arrayBuffer();
        }
      }
    } finally {
      server.database.db.off('query', capture);
    }
  });
  afterAll(async () => {
    await server.close();
  });

  it('audits a real set of endpoints and reads', () => {
    expect(paths.length).toBeGreaterThan(20);
    expect(new Set(statements.map((statement) => statement.path)).size).toBeGreaterThan(15);
  });

  it('reads every table through an index (no full scan of a table that grows with tenants)', async () => {
    const db = server.database.db;
    const seen = new Set<string>();
    const scans: string[] = [];
    for (const statement of statements) {
      if (seen.has(statement.sql)) continue;
      seen.add(statement.sql);
      const plan = await explain(db, statement.sql, statement.bindings);
      for (const table of fullScans(db, plan)) {
        if (!SMALL_TABLES.has(table))
          scans.push(`${statement.path}: ${table}\n  ${statement.sql}\n  ${plan.replace(/\n/g, '\n  ')}`);
      }
    }
    expect(scans, scans.join('\n\n')).toEqual([]);
  });

  it("reads a user's active sessions in order from the partial index, whatever their revoked history (sign-in, account page)", async () => {
    const db = server.database.db;
    for (const order of ['asc', 'desc'] as const) {
      const query = db('identity_sessions')
        .where({ user_id: '00000000-0000-7000-8000-000000000000' })
        .whereNull('revoked_at')
        .andWhere('expires_at', '>', new Date().toISOString())
        .orderBy([
          { column: 'created_at', order },
          { column: 'id', order },
        ])
        .select('id')
        .toSQL();
      const plan = await explain(db, query.sql, query.bindings);
      expect(plan).toContain('identity_sessions_active_index');
      expect(plan).not.toMatch(/TEMP B-TREE|Sort/);
    }
  });

  it("finds the provider's payloads through the payload table's partial indexes", async () => {
    const db = server.database.db;
    const lookups = [
      {
        sql: "select id, payload from oidc_payloads where model = 'Session' and session_id = ?",
        bindings: ['some-session'],
        index: 'oidc_payloads_session_id_set_index',
      },
      {
        sql: 'select * from oidc_payloads where model = ? and uid = ? limit 1',
        bindings: ['Interaction', 'some-uid'],
        index: 'oidc_payloads_uid_index',
      },
      // A grant's codes and tokens: revoked by grant id, and deleted in lists of grants when sessions end.
      {
        sql: 'delete from oidc_payloads where grant_id = ?',
        bindings: ['some-grant'],
        index: 'oidc_payloads_grant_id_set_index',
      },
      {
        sql: 'delete from oidc_payloads where grant_id in (?, ?, ?, ?)',
        bindings: ['grant-1', 'grant-2', 'grant-3', 'grant-3'],
        index: 'oidc_payloads_grant_id_set_index',
      },
      // A user's sessions (account page, session eviction) and grants (consent revoked).
      {
        sql: "select id, payload, session_id, account_id from oidc_payloads where model = 'Session' and account_id = ?",
        bindings: ['some-user'],
        index: 'oidc_payloads_account_id_set_index',
      },
      {
        sql: 'select distinct grant_id from oidc_payloads where account_id = ? and grant_id is not null and client_id = ?',
        bindings: ['some-user', 'some-client'],
        index: /oidc_payloads_(account|client)_id_set_index/,
      },
      // A client's grants with their codes and refresh tokens, deleted when its secret is rotated with revocation,
      // and when it is suspended or deleted: the grants by client, then every row of each grant.
      {
        sql: 'delete from oidc_payloads where grant_id in (select grant_id from oidc_payloads where model = ? and client_id = ?)',
        bindings: ['Grant', 'some-client'],
        index:
          /oidc_payloads_client_id_set_index(.|\n)*oidc_payloads_grant_id_set_index|oidc_payloads_grant_id_set_index(.|\n)*oidc_payloads_client_id_set_index/,
      },
    ];
    for (const { sql, bindings, index } of lookups) expect(await explain(db, sql, bindings)).toMatch(index);
    // Partial: a refresh token, a code or a grant has no uid; an interaction or a session lacks a grant id;
    // only sessions fill the session column, and only sessions and grants the account and client columns; no
    // index holds an entry for a column that is not set.
    const indexes = [
      'oidc_payloads_session_id_set_index',
      'oidc_payloads_uid_index',
      'oidc_payloads_grant_id_set_index',
      'oidc_payloads_account_id_set_index',
      'oidc_payloads_client_id_set_index',
    ];
    const definitions = await indexDefinitions(db);
    for (const index of indexes) expect(definitions.get(index)).toMatch(/ where /i);
  });

  it('keeps no partial index that compares a column with a constant, so SQLite plans each prepared statement once', async () => {
    // SQLite decides whether such an index may serve a statement by comparing the value bound to that column with
    // the index's constant, and then plans the statement anew each time a value is bound to it. The payload
    // table's `where model = 'Session'` index did that to every join or non-key read of the table that binds its
    // `model` (the code's and refresh token's read with their grant, an interaction's read by uid): parsed and
    // planned again on every call. Conditions on whether a column is set do not depend on bound values.
    const conditions = await partialIndexConditions(server.database.db);
    expect(conditions.length).toBeGreaterThan(5);
    const comparing = conditions.filter(
      ({ index, condition }) =>
        !CONSTANT_CONDITION_INDEXES.has(index) && !/^\(*\s*"?\w+"?\s+is\s+(not\s+)?null\s*\)*$/i.test(condition),
    );
    expect(comparing).toEqual([]);
  });
});

/**
 * Partial indexes allowed a condition on a value, each with its reason: a
 * uniqueness rule (one active signing key per algorithm) on a table of a
 * handful of rows, read when keys load or rotate, not per request.
 */
const CONSTANT_CONDITION_INDEXES = new Set(['core_signing_keys_one_active']);

/** Every partial index of the schema and its condition (the text after `where`). */
async function partialIndexConditions(db: Knex): Promise<Array<{ index: string; condition: string }>> {
  return [...(await indexDefinitions(db))].flatMap(([index, definition]) => {
    const condition = /\swhere\s+(.*)$/is.exec(definition)?.[1]?.trim();
    return condition ? [{ index, condition }] : [];
  });
}

/** The query plan as text: SQLite's EXPLAIN QUERY PLAN; Postgres' EXPLAIN with sequential scans priced out. */
async function explain(db: Knex, sql: string, bindings: readonly Knex.RawBinding[]): Promise<string> {
  if (dialectOf(db) === 'sqlite') {
    const rows: Array<{ detail: string }> = await db.raw(`explain query plan ${sql}`, bindings as Knex.RawBinding[]);
    return rows.map((row) => row.detail).join('\n');
  }
  return db.transaction(async (trx) => {
    // Test tables are tiny and every scan is cheap; with sequential scans priced out, only a missing index leaves one.
    await trx.raw('set local enable_seqscan = off');
    const result = await trx.raw(`explain ${sql.replace(/\$\d+/g, '?')}`, bindings as Knex.RawBinding[]);
    return (result.rows as Array<{ 'QUERY PLAN': string }>).map((row) => row['QUERY PLAN']).join('\n');
  });
}

/** Tables a plan reads in full. */
function fullScans(db: Knex, plan: string): string[] {
  const pattern = dialectOf(db) === 'sqlite' ? /^\s*SCAN (\w+)(?: AS \w+)?(?! USING)(?:\s|$)/gm : /Seq Scan on (\w+)/g;
  const tables: string[] = [];
  for (const match of plan.matchAll(pattern)) {
    const line = plan.slice(match.index ?? 0).split('\n')[0] ?? '';
    if (/USING (COVERING )?INDEX|USING INTEGER PRIMARY KEY|SCAN CONSTANT ROW/.test(line)) continue;
    tables.push(match[1] as string);
  }
  return tables;
}
