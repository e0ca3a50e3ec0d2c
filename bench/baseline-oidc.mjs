/**
 * The client-credentials baselines: stock oidc-provider (the version idt
 * installs) with JWT access tokens signed with ES256 for one resource
 * server, which is what idt issues. No idt code is involved.
 *
 * - Memory (default): the default in-memory adapter and one static
 *   confidential client, BENCH_CLIENT_ID / BENCH_CLIENT_SECRET.
 * - Knex (BENCH_DATABASE_URL set, `sqlite:<file>` or `postgres://…`): the
 *   plain one-table adapter of bench/knex-adapter.mjs over that database,
 *   holding the clients of BENCH_CLIENTS_FILE (a JSON array of
 *   `{ clientId, clientSecret }`) as stored `Client` payloads, looked up by
 *   the provider on every request as with any adapter-backed client store.
 *
 *   node bench/baseline-oidc.mjs <port>
 *
 * Prints `listening <url>` once it accepts connections.
 */
import { generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import Provider from 'oidc-provider';
import { createAdapterTable, knexAdapter, storeClients } from './knex-adapter.mjs';

const port = Number(process.argv[2] ?? 0);
const issuer = `http://127.0.0.1:${port}`;
const resource = issuer;
const clientId = process.env.BENCH_CLIENT_ID ?? 'bench-client';
const clientSecret = process.env.BENCH_CLIENT_SECRET ?? 'bench-secret-bench-secret-bench-secret';
const databaseUrl = process.env.BENCH_DATABASE_URL;

const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const jwk = { ...privateKey.export({ format: 'jwk' }), kid: 'bench-es256', alg: 'ES256', use: 'sig' };

/** A confidential client allowed client credentials only. */
const clientMetadata = (id, secret) => ({
  client_id: id,
  client_secret: secret,
  grant_types: ['client_credentials'],
  redirect_uris: [],
  response_types: [],
  token_endpoint_auth_method: 'client_secret_basic',
  // The only key is ES256 (RS256 is the default, and unused by client credentials).
  id_token_signed_response_alg: 'ES256',
});

/** The knex database of BENCH_DATABASE_URL, configured as idt configures its own (WAL on SQLite). */
async function openDatabase(url) {
  const { default: knex } = await import('knex');
  if (url.startsWith('sqlite:')) {
    return knex({
      client: 'better-sqlite3',
      connection: { filename: url.slice('sqlite:'.length) },
      useNullAsDefault: true,
      pool: {
        min: 1,
        max: 1,
        afterCreate(connection, done) {
          connection.pragma('journal_mode = WAL');
          connection.pragma('synchronous = NORMAL');
          connection.pragma('busy_timeout = 5000');
          done(null, connection);
        },
      },
    });
  }
  return knex({ client: 'pg', connection: { connectionString: url }, pool: { min: 0, max: 10 } });
}

let adapter;
let db;
let clients = [clientMetadata(clientId, clientSecret)];
if (databaseUrl) {
  const table = 'bench_oidc_payloads';
  db = await openDatabase(databaseUrl);
  await createAdapterTable(db, table);
  const stored = JSON.parse(readFileSync(process.env.BENCH_CLIENTS_FILE ?? '', 'utf8'));
  await storeClients(
    db,
    table,
    stored.map((client) => clientMetadata(client.clientId, client.clientSecret)),
  );
  adapter = knexAdapter(db, table);
  clients = [];
}

const provider = new Provider(issuer, {
  ...(adapter ? { adapter } : {}),
  clients,
  jwks: { keys: [jwk] },
  routes: { token: '/connect/token' },
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: async () => resource,
      useGrantedResource: async () => true,
      getResourceServerInfo: async () => ({
        scope: 'users.read',
        audience: resource,
        accessTokenTTL: 900,
        accessTokenFormat: 'jwt',
        jwt: { sign: { alg: 'ES256' } },
      }),
    },
  },
  ttl: { ClientCredentials: 900 },
});
provider.on('server_error', (_ctx, error) => console.error('server_error', error));

const server = createServer({ keepAliveTimeout: 65_000 }, provider.callback());
server.listen(port, '127.0.0.1', () => console.log(`listening ${issuer}`));
const stop = () => {
  server.close(() => {
    if (db) void db.destroy().finally(() => process.exit(0));
    else process.exit(0);
  });
  server.closeAllConnections();
};
process.once('SIGTERM', stop);
process.once('SIGINT', stop);
