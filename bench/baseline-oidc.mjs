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
 * - Flows (BENCH_REFRESH_CHAINS=n, either adapter): also an
 *   application client, BENCH_APP_ID / BENCH_APP_SECRET, allowed the
 *   authorization_code and refresh_token grants, configured as idt
 *   configures its own: PKCE required, rotating refresh tokens, RS256 id
 *   tokens (OpenID Connect's default, and idt's), ES256 JWT access tokens
 *   for the same resource, an account with the profile and email claims.
 *   - The sign-in runs through oidc-provider's own development interactions
 *     (a login form that takes any name and checks no password), and the
 *     grant of a first-party client is made without a consent page, as
 *     idt's sign-in pages do: the full flow of stock oidc-provider without
 *     the password check.
 *   - At start it mints n refresh tokens, each on its own grant for its own
 *     account (what a code exchange leaves behind), and prints them as one
 *     line `refresh-tokens <json array>`: the refresh_token grant measured
 *     from there is stock oidc-provider's own.
 *   - With BENCH_DATABASE_URL the application client is stored with the
 *     others (BENCH_CLIENTS_FILE is then optional), and the grants, tokens
 *     and sessions go through the knex adapter: the grant as it runs when
 *     the tokens are kept.
 *   - With BENCH_USER_EMAIL and BENCH_USER_PASSWORD_HASH (an argon2id PHC
 *     string; or BENCH_USER_PASSWORD, hashed here with idt's parameters),
 *     the development interactions give way to a login form of the server's
 *     own, written the way oidc-provider's documentation has integrators
 *     write one (`interactionDetails`, `interactionFinished`): `GET
 *     /interaction/<uid>` shows an e-mail and password form, and its `POST
 *     …/login` looks the user up by e-mail (in the knex store's
 *     `bench_users` table with BENCH_DATABASE_URL, in memory without) and
 *     verifies the posted password against the stored hash with
 *     @node-rs/argon2, at most as many verifications at once as idt's
 *     hasher runs (packages/identity/src/passwords.ts: one per core this
 *     process may run on, and one thread of libuv's pool left free;
 *     BENCH_ARGON2_CONCURRENCY overrides). A wrong password answers 401.
 *     That is stock oidc-provider's own sign-in with the password check idt
 *     makes, and nothing else of idt's.
 *
 * Prints `listening <url>` once it accepts connections (after a
 * `login-form …` line describing the form, when there is one).
 */
import { generateKeyPairSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { availableParallelism } from 'node:os';
import Provider from 'oidc-provider';
import { createAdapterTable, knexAdapter, storeClients } from './knex-adapter.mjs';

const port = Number(process.argv[2] ?? 0);
const issuer = `http://127.0.0.1:${port}`;
const resource = issuer;
const clientId = process.env.BENCH_CLIENT_ID ?? 'bench-client';
const clientSecret = process.env.BENCH_CLIENT_SECRET ?? 'bench-secret-bench-secret-bench-secret';
const databaseUrl = process.env.BENCH_DATABASE_URL;
const refreshChains = Number(process.env.BENCH_REFRESH_CHAINS ?? 0);
const appId = process.env.BENCH_APP_ID ?? 'bench-app';
const appSecret = process.env.BENCH_APP_SECRET ?? 'bench-app-secret-bench-app-secret-bench';
const LOGIN_SCOPE = 'openid offline_access profile email';
/** The application's redirect URI: the flow client stops at it and takes the code from its query. */
const APP_REDIRECT_URI = process.env.BENCH_APP_REDIRECT_URI ?? 'https://rp.example.com/callback';
/** The one user of the login form (with a hash or a password: the form checks passwords). */
const userEmail = process.env.BENCH_USER_EMAIL;
const loginForm = refreshChains > 0 && userEmail !== undefined;
/** idt's argon2id parameters (packages/identity/src/passwords.ts), as @node-rs/argon2 names them. */
const ARGON2_PARAMETERS = { algorithm: 2, memoryCost: 19_456, timeCost: 2, parallelism: 1 };
const USERS_TABLE = 'bench_users';

const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
const jwk = { ...privateKey.export({ format: 'jwk' }), kid: 'bench-es256', alg: 'ES256', use: 'sig' };
const keys = [jwk];
if (refreshChains > 0) {
  const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
  keys.push({ ...rsa.export({ format: 'jwk' }), kid: 'bench-rs256', alg: 'RS256', use: 'sig' });
}

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

/** The application client of the refresh baseline: code + refresh_token, RS256 id tokens. */
const appMetadata = {
  client_id: appId,
  client_secret: appSecret,
  grant_types: ['authorization_code', 'refresh_token'],
  redirect_uris: [APP_REDIRECT_URI],
  response_types: ['code'],
  token_endpoint_auth_method: 'client_secret_basic',
  id_token_signed_response_alg: 'RS256',
  scope: LOGIN_SCOPE,
};

let adapter;
let db;
let clients = [clientMetadata(clientId, clientSecret), ...(refreshChains > 0 ? [appMetadata] : [])];
if (databaseUrl) {
  const table = 'bench_oidc_payloads';
  db = await openDatabase(databaseUrl);
  await createAdapterTable(db, table);
  const clientsFile = process.env.BENCH_CLIENTS_FILE;
  const stored = clientsFile ? JSON.parse(readFileSync(clientsFile, 'utf8')) : [];
  await storeClients(db, table, [
    ...stored.map((client) => clientMetadata(client.clientId, client.clientSecret)),
    ...(refreshChains > 0 ? [appMetadata] : []),
  ]);
  adapter = knexAdapter(db, table);
  clients = [];
}

/**
 * The login form's user store, looked up by e-mail: a `bench_users` table in
 * the knex database (a plain query through the same connection pool as the
 * adapter), or a map in memory without one.
 */
let findUser;
let verifyPassword;
if (loginForm) {
  const argon2 = await import('@node-rs/argon2');
  const passwordHash =
    process.env.BENCH_USER_PASSWORD_HASH ?? (await argon2.hash(process.env.BENCH_USER_PASSWORD ?? '', ARGON2_PARAMETERS));
  const user = { email: normalizeEmail(userEmail), account_id: 'bench-login-user', password_hash: passwordHash };
  if (db) {
    if (!(await db.schema.hasTable(USERS_TABLE))) {
      await db.schema.createTable(USERS_TABLE, (t) => {
        t.string('email', 320).primary();
        t.string('account_id', 255).notNullable();
        t.text('password_hash').notNullable();
      });
    }
    await db(USERS_TABLE).insert(user).onConflict('email').merge();
    findUser = (email) => db(USERS_TABLE).where({ email }).first('account_id', 'password_hash');
  } else {
    const users = new Map([[user.email, user]]);
    findUser = async (email) => users.get(email);
  }
  // idt's hasher's policy: at most one argon2id computation per core this process may run on (taskset
  // included), and never so many that libuv's pool has no thread left; the rest wait their turn.
  const pool = Number(process.env.UV_THREADPOOL_SIZE) || 4;
  const concurrency = Number(process.env.BENCH_ARGON2_CONCURRENCY) || Math.max(1, Math.min(availableParallelism(), pool - 1));
  const limit = limiter(concurrency);
  verifyPassword = (encoded, password) => limit(() => argon2.verify(encoded, password).catch(() => false));
  const parameters = /^\$argon2id\$v=\d+\$([^$]+)\$/.exec(passwordHash)?.[1] ?? 'not an argon2id hash';
  console.log(
    `login-form argon2id ${parameters}, ${concurrency} verification${concurrency === 1 ? '' : 's'} at a time, user in ${db ? `the knex store (${USERS_TABLE})` : 'memory'}`,
  );
}

/** E-mail addresses are looked up trimmed and lower-cased. */
function normalizeEmail(email) {
  return String(email).trim().toLowerCase();
}

/** Runs tasks with at most `max` in flight, first come first served. */
function limiter(max) {
  let running = 0;
  const waiting = [];
  return async (task) => {
    if (running < max) running++;
    else await new Promise((resolve) => waiting.push(resolve));
    try {
      return await task();
    } finally {
      const next = waiting.shift();
      if (next) next();
      else running--;
    }
  };
}

const provider = new Provider(issuer, {
  ...(adapter ? { adapter } : {}),
  clients,
  jwks: { keys },
  scopes: LOGIN_SCOPE.split(' '),
  claims: { openid: ['sub'], profile: ['name', 'given_name', 'family_name'], email: ['email', 'email_verified'] },
  findAccount: async (_ctx, sub) => ({
    accountId: sub,
    claims: async () => ({
      sub,
      name: 'Bench User',
      given_name: 'Bench',
      family_name: 'User',
      email: `${sub}@bench.example`,
      email_verified: true,
    }),
  }),
  rotateRefreshToken: true,
  // As idt: a client allowed the refresh_token grant gets a refresh token with every code.
  issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
  pkce: { required: () => true },
  // A first-party sign-in: the grant of what was asked is made on the way back from the login page.
  loadExistingGrant: async (ctx) => {
    const grantId = ctx.oidc.result?.consent?.grantId || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
    if (grantId) return ctx.oidc.provider.Grant.find(grantId);
    if (ctx.oidc.client.clientId !== appId || !ctx.oidc.session.accountId) return undefined;
    const grant = new ctx.oidc.provider.Grant({ accountId: ctx.oidc.session.accountId, clientId: appId });
    grant.addOIDCScope(ctx.oidc.params.scope);
    grant.addResourceScope(resource, `${LOGIN_SCOPE} users.read`);
    await grant.save();
    return grant;
  },
  routes: { authorization: '/connect/authorize', token: '/connect/token' },
  // The login form below (oidc-provider's default place for it, spelled out).
  interactions: { url: async (_ctx, interaction) => `/interaction/${interaction.uid}` },
  features: {
    devInteractions: { enabled: refreshChains > 0 && !loginForm },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: async () => resource,
      useGrantedResource: async () => true,
      getResourceServerInfo: async () => ({
        scope: refreshChains > 0 ? `${LOGIN_SCOPE} users.read` : 'users.read',
        audience: resource,
        accessTokenTTL: 900,
        accessTokenFormat: 'jwt',
        jwt: { sign: { alg: 'ES256' } },
      }),
    },
  },
  ttl: {
    ClientCredentials: 900,
    AccessToken: 900,
    AuthorizationCode: 60,
    IdToken: 3600,
    Grant: 31_622_400,
    RefreshToken: 30 * 24 * 3600,
    Session: 86_400,
    Interaction: 3600,
  },
});
provider.on('server_error', (_ctx, error) => console.error('server_error', error));

/** What a code exchange leaves behind, once per chain: a grant of its own account and a refresh token on it. */
if (refreshChains > 0) {
  const app = await provider.Client.find(appId);
  const tokens = [];
  for (let index = 0; index < refreshChains; index++) {
    const accountId = `bench-user-${index}`;
    const grant = new provider.Grant({ accountId, clientId: appId });
    grant.addOIDCScope(LOGIN_SCOPE);
    grant.addResourceScope(resource, `${LOGIN_SCOPE} users.read`);
    const grantId = await grant.save();
    const refreshToken = new provider.RefreshToken({
      accountId,
      client: app,
      grantId,
      gty: 'authorization_code',
      scope: LOGIN_SCOPE,
      resource,
      authTime: Math.floor(Date.now() / 1000),
    });
    tokens.push(await refreshToken.save());
  }
  console.log(`refresh-tokens ${JSON.stringify(tokens)}`);
}

/** The login form's page: an e-mail and a password, posted to `/interaction/<uid>/login`. */
function loginPage(uid, error) {
  const action = `/interaction/${encodeURIComponent(uid)}/login`;
  return `<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Sign in</title></head>
<body><main><h1>Sign in</h1>${error ? `<p role="alert">${error}</p>` : ''}
<form method="post" action="${action}">
<label>E-mail <input type="email" name="email" autocomplete="username" required></label>
<label>Password <input type="password" name="password" autocomplete="current-password" required></label>
<button type="submit">Sign in</button>
</form></main></body></html>`;
}

/** A request's urlencoded body (at most 16 KiB). */
function readForm(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    req.on('data', (chunk) => {
      size += chunk.length;
      if (size > 16_384) req.destroy(new Error('form too large'));
      else chunks.push(chunk);
    });
    req.on('end', () => resolve(new URLSearchParams(Buffer.concat(chunks).toString('utf8'))));
    req.on('error', reject);
  });
}

function answer(res, status, html) {
  res.statusCode = status;
  res.setHeader('content-type', 'text/html; charset=utf-8');
  res.setHeader('cache-control', 'no-store');
  res.end(html);
}

/**
 * `GET /interaction/<uid>` shows the form; `POST /interaction/<uid>/login`
 * looks the user up by e-mail, verifies the password (argon2id) and
 * finishes the interaction with the login, which sends the browser back to
 * the authorization endpoint.
 */
async function interaction(req, res) {
  const match = /^\/interaction\/([^/?]+)(\/login)?(?:\?|$)/.exec(req.url ?? '');
  if (!match) return answer(res, 404, 'not found');
  let details;
  try {
    details = await provider.interactionDetails(req, res);
  } catch (error) {
    return answer(res, 400, `no interaction: ${error.name}`);
  }
  if (details.uid !== match[1]) return answer(res, 400, 'another interaction');
  if (details.prompt.name !== 'login') return answer(res, 501, `prompt ${details.prompt.name} not implemented`);
  if (req.method === 'GET' && !match[2]) return answer(res, 200, loginPage(details.uid));
  if (req.method !== 'POST' || !match[2]) return answer(res, 405, 'method not allowed');
  const form = await readForm(req);
  const user = await findUser(normalizeEmail(form.get('email') ?? ''));
  const valid = user ? await verifyPassword(user.password_hash, form.get('password') ?? '') : false;
  if (!valid) return answer(res, 401, loginPage(details.uid, 'Wrong e-mail or password.'));
  await provider.interactionFinished(req, res, { login: { accountId: user.account_id } }, { mergeWithLastSubmission: false });
}

const callback = provider.callback();
const handler = loginForm
  ? (req, res) => {
      if (!req.url?.startsWith('/interaction/')) return callback(req, res);
      interaction(req, res).catch((error) => {
        console.error('login form', error);
        if (!res.headersSent) answer(res, 500, 'login form failed');
        else res.destroy();
      });
    }
  : callback;
const server = createServer({ keepAliveTimeout: 65_000 }, handler);
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
