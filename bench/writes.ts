/**
 * What a refresh grant and a full sign-in write to the database, counted
 * rather than timed, so that two versions compare exactly on any machine
 * however busy it is:
 *
 * - SQLite: WAL frames (pages) written per flow, what its commits write and
 *   its checkpoints copy back, the main cost of a write on a slow disk;
 * - PostgreSQL (`--dialect postgres`): WAL bytes per flow, after a
 *   checkpoint, so each page's first change after it writes its full image
 *   in every run alike (the cluster's WAL: run it on an otherwise idle
 *   server);
 * - transactions, and write and read statements per flow, by statement;
 * - SQLite: the WAL frames per flow by table and index (each frame's page
 *   number, read from the WAL file before the count's checkpoint, named
 *   through SQLite's `dbstat` table).
 *
 * It starts the reference server on a throwaway database (the test
 * toolkit's server, over HTTP on a loopback port), signs the first
 * administrator in with openid-client, then runs refresh grants on a few
 * chains and sign-ins of the same administrator. Every sign-in past the
 * session limit evicts the oldest session, as in the flows group of
 * bench/run.mjs. On SQLite, automatic checkpoints are off while it counts.
 *
 *   node --import tsx bench/writes.ts [--dialect sqlite|postgres] [--refreshes 400] [--sign-ins 20] [--top 30] [--json]
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
// The toolkit's server and OIDC helpers, not its index: the index loads vitest, which runs only under vitest.
import { bootstrapAdmin, discover, redeemCode, refreshTokenRequest, registerClient, signIn } from '../test/support/oidc.js';
import { startTestServer } from '../test/support/server.js';
import { framesByObject, walFramePages } from './wal-frames.js';

const { values: args } = parseArgs({
  options: {
    refreshes: { type: 'string', default: '400' },
    'sign-ins': { type: 'string', default: '20' },
    top: { type: 'string', default: '30' },
    dialect: { type: 'string', default: 'sqlite' },
    json: { type: 'boolean', default: false },
    help: { type: 'boolean', default: false },
  },
});
const USAGE =
  'node --import tsx bench/writes.ts [--dialect sqlite|postgres] [--refreshes 400] [--sign-ins 20] [--top 30] [--json]';
if (args.help) {
  console.log(USAGE);
  process.exit(0);
}
if (args.dialect !== 'sqlite' && args.dialect !== 'postgres') {
  console.error(`--dialect must be sqlite or postgres\n${USAGE}`);
  process.exit(2);
}
const DIALECT = args.dialect;
const REFRESHES = Number(args.refreshes);
const SIGN_INS = Number(args['sign-ins']);
const TOP = Number(args.top);
/** Chains of the one administrator: fewer than the five sessions a user keeps, so no chain evicts another. */
const CHAINS = 4;
const REDIRECT = 'http://127.0.0.1:9/callback';
const SCOPE = 'openid offline_access users.read';

/**
 * Statements run, by SQL, while `counting` is on. SQLite: every statement of
 * better-sqlite3, knex's and idt's own. PostgreSQL: every statement knex
 * reports (its `query` event, which idt's own statements emit too).
 */
const statements = new Map<string, number>();
let counting = false;
{
  const probe = new Database(':memory:');
  const prototype = Object.getPrototypeOf(probe.prepare('select 1')) as Record<string, (...values: unknown[]) => unknown>;
  probe.close();
  for (const method of ['run', 'all', 'get', 'iterate']) {
    const original = prototype[method] as (...values: unknown[]) => unknown;
    prototype[method] = function (this: { source: string }, ...values: unknown[]) {
      if (counting) {
        const sql = this.source.trim().replace(/\s+/g, ' ');
        statements.set(sql, (statements.get(sql) ?? 0) + 1);
      }
      return original.apply(this, values);
    };
  }
}

const server = await startTestServer({ dialect: DIALECT });
if (DIALECT === 'postgres') {
  server.database.db.on('query', (query: { sql: string }) => {
    if (!counting) return;
    const sql = query.sql.trim().replace(/\s+/g, ' ');
    statements.set(sql, (statements.get(sql) ?? 0) + 1);
  });
}
try {
  const admin = await bootstrapAdmin(server);
  const client = await registerClient(server, await admin.token(), admin.organizationId, {
    kind: 'application',
    name: 'Writes bench',
    redirectUris: [REDIRECT],
    scopes: SCOPE.split(' '),
  });
  const config = await discover(server, client);
  const db = server.database.db;
  const pragma = async (sql: string) => (await db.raw(`pragma ${sql}`)) as Array<Record<string, number>>;
  const signInOnce = async () =>
    redeemCode(
      config,
      await signIn(config, { redirectUri: REDIRECT, scope: SCOPE, email: admin.email, password: admin.password }),
    );
  const refresh = async (token: string): Promise<string> => {
    const response = await refreshTokenRequest(server, client, token);
    const body = (await response.json()) as { refresh_token?: string };
    if (response.status !== 200 || !body.refresh_token) {
      throw new Error(`refresh grant answered ${response.status}: ${JSON.stringify(body)}`);
    }
    return body.refresh_token;
  };

  /**
   * Starts counting what the database writes and answers the function that
   * stops and answers the count: SQLite's WAL frames, with automatic
   * checkpoints off meanwhile; PostgreSQL's WAL bytes since a checkpoint.
   */
  const startWalCount = async (): Promise<() => Promise<{ written: number; byObject?: Map<string, number> }>> => {
    if (DIALECT === 'sqlite') {
      await pragma('wal_autocheckpoint = 0');
      await pragma('wal_checkpoint(TRUNCATE)');
      return async () => {
        const byObject = await walFramesByObject();
        const [{ log = 0 } = {}] = await pragma('wal_checkpoint(PASSIVE)');
        await pragma('wal_autocheckpoint = 1000');
        return { written: log, byObject };
      };
    }
    await db.raw('checkpoint');
    const since = ((await db.raw('select pg_current_wal_lsn() as lsn')).rows[0] as { lsn: string }).lsn;
    return async () => {
      const diff = await db.raw('select pg_wal_lsn_diff(pg_current_wal_lsn(), ?) as bytes', [since]);
      return { written: Number((diff.rows[0] as { bytes: string }).bytes) };
    };
  };
  /** The frames of the WAL file, counted by the table or index that owns each frame's page (see bench/wal-frames.ts). */
  const walFramesByObject = async (): Promise<Map<string, number>> => {
    const [{ file } = { file: '' }] = (await db.raw('pragma database_list')) as Array<{ file: string }>;
    const rows = (await db.raw('select name, pageno from dbstat')) as Array<{ name: string; pageno: number }>;
    return framesByObject(walFramePages(readFileSync(`${file}-wal`)), new Map(rows.map((row) => [row.pageno, row.name])));
  };
  /** Runs `flow` `count` times; answers what it wrote per flow ({@link startWalCount}) and its statements. */
  const measure = async (count: number, flow: () => Promise<void>) => {
    const stopWalCount = await startWalCount();
    statements.clear();
    counting = true;
    for (let i = 0; i < count; i++) await flow();
    counting = false;
    const { written, byObject } = await stopWalCount();
    /** The statements whose SQL `keep` accepts, most frequent first, per flow. */
    const perFlow = (keep: (sql: string) => boolean) =>
      [...statements]
        .filter(([sql]) => keep(sql))
        .sort((a, b) => b[1] - a[1])
        .map(([sql, n]) => ({ perFlow: n / count, sql }));
    // A `with` that inserts, updates or deletes is a write (the adapter's consumption and successor in one statement).
    const isRead = (sql: string) => /^select\b/i.test(sql) || (/^with\b/i.test(sql) && !/\b(insert|update|delete)\b/i.test(sql));
    const writes = perFlow((sql) => !isRead(sql) && !/^(pragma|begin|commit|rollback|savepoint|release)\b/i.test(sql));
    // Reads, and on Postgres the cache evictions' `select pg_notify(…)`.
    const reads = perFlow(isRead);
    return {
      ...(DIALECT === 'sqlite' ? { walFramesPerFlow: written / count } : { walBytesPerFlow: written / count }),
      ...(byObject && {
        walFramesByObject: [...byObject]
          .sort((a, b) => b[1] - a[1])
          .map(([object, frames]) => ({ object, perFlow: frames / count })),
      }),
      // knex's `BEGIN;`, and the `begin immediate` of idt's own statements run together.
      transactionsPerFlow: perFlow((sql) => /^begin\b/i.test(sql)).reduce((sum, begin) => sum + begin.perFlow, 0),
      writeStatementsPerFlow: writes.reduce((sum, write) => sum + write.perFlow, 0),
      readStatementsPerFlow: reads.reduce((sum, read) => sum + read.perFlow, 0),
      writes: writes.slice(0, TOP),
      reads: reads.slice(0, TOP),
    };
  };

  // Chains first, then a warm-up of every path (caches, prepared statements, the sessions the sign-ins will evict).
  const chains: string[] = [];
  for (let i = 0; i < CHAINS; i++) chains.push((await signInOnce()).refresh_token ?? '');
  for (let round = 0; round < 10; round++) {
    for (let chain = 0; chain < CHAINS; chain++) chains[chain] = await refresh(chains[chain] as string);
  }
  let next = 0;
  const refreshFlow = async () => {
    const chain = next++ % CHAINS;
    chains[chain] = await refresh(chains[chain] as string);
  };
  const refreshes = await measure(REFRESHES, refreshFlow);
  for (let i = 0; i < 6; i++) await signInOnce();
  const signIns = await measure(SIGN_INS, async () => {
    await signInOnce();
  });

  if (args.json) {
    console.log(JSON.stringify({ refreshes: { count: REFRESHES, ...refreshes }, signIns: { count: SIGN_INS, ...signIns } }));
  } else {
    for (const [name, count, result] of [
      ['refresh grant', REFRESHES, refreshes],
      ['full sign-in (evicting the oldest session)', SIGN_INS, signIns],
    ] as const) {
      console.log(`\n${name}, ${count} measured:`);
      if ('walFramesPerFlow' in result) {
        console.log(`  WAL frames (pages written) per flow: ${result.walFramesPerFlow.toFixed(2)}`);
      } else {
        console.log(`  WAL bytes per flow:                  ${Math.round(result.walBytesPerFlow)}`);
      }
      if ('walFramesByObject' in result && result.walFramesByObject) {
        console.log('  WAL frames per flow, by table or index:');
        for (const { object, perFlow } of result.walFramesByObject) {
          console.log(`    ${perFlow.toFixed(2).padStart(6)}  ${object}`);
        }
      }
      console.log(`  transactions per flow:               ${result.transactionsPerFlow.toFixed(2)}`);
      console.log(`  write statements per flow:           ${result.writeStatementsPerFlow.toFixed(2)}`);
      console.log(`  read statements per flow:            ${result.readStatementsPerFlow.toFixed(2)}`);
      console.log('  write statements, per flow:');
      for (const write of result.writes) console.log(`    ${write.perFlow.toFixed(2).padStart(6)}  ${write.sql.slice(0, 150)}`);
      console.log('  read statements, per flow:');
      for (const read of result.reads) console.log(`    ${read.perFlow.toFixed(2).padStart(6)}  ${read.sql.slice(0, 150)}`);
    }
  }
} finally {
  await server.close();
}
