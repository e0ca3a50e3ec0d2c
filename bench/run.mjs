#!/usr/bin/env node
/**
 * idt benchmarks: every path of issue 16, with the rows issue 46 restated,
 * against the real reference server on SQLite and on PostgreSQL, each
 * beside a baseline measured in the same run: client-credentials tokens
 * (stock oidc-provider, memory adapter), bearer reads with service-account
 * and user tokens and the users list (bare node:http), the full sign-in and
 * the refresh_token grant (stock oidc-provider's own, keeping its state
 * through a knex adapter on the same engine, its sign-in through a login
 * form that verifies the same argon2id hash as idt's, with the same library,
 * parameters and one-per-core concurrency; argon2id alone and stock's flows
 * on its memory adapter for information), the same sign-in with a TOTP
 * second step, and single sign-on through a second idt (the upstream, on
 * SQLite, its own process) beside the password sign-in, tokens spread over
 * 10,000 clients (stock oidc-provider with a knex adapter on the same
 * engine), and the same paths again at 100,000 users / 10,000 organizations
 * / 100,000 memberships / 10,000 clients (against the empty database). Also
 * the server's cold start, RSS idle, and RSS under token load at scale over
 * the stock knex spread server's RSS. See docs/benchmarks.md.
 *
 *   npm run bench [-- --duration 10 --group tokens,api --only sqlite --no-scale --json --strict]
 *
 * Every server and load generator runs as a separate child process, pinned
 * to different cores with taskset when it exists.
 */
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDistStale } from '../scripts/dist-stale.mjs';
import { SERVER_BUNDLE_OPTIONS } from '../scripts/server-bundle.mjs';
import { SERVER_ENV, SERVER_NODE_FLAGS } from '../scripts/server-flags.mjs';
import { basicAuth, createAgent, refresh, send, signIn } from './flow-client.mjs';
import { formatProfileSummary, summarizeProfile } from './profile-summary.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
process.chdir(ROOT);

// ---------------------------------------------------------------- options

const GROUPS = ['tokens', 'api', 'flows', 'spread', 'scale', 'scim-audit'];

const USAGE = `Usage: npm run bench -- [options]

  --duration <s>      measured seconds per scenario (default 10; env BENCH_DURATION)
  --warmup <s>        warm-up seconds before each measurement (default 3; env BENCH_WARMUP)
  --connections <n>   concurrent connections, and refresh-token chains (default 20; env BENCH_CONNECTIONS)
  --repeat <n>        measure every scenario n times, alternating with its baseline; report the median
                      (default 1; env BENCH_REPEAT)
  --only <what>       sqlite | postgres: run the baselines and that database only (env BENCH_ONLY)
  --group <list>      comma-separated groups to run (default all; env BENCH_GROUP):
                        tokens  client credentials, one client, against stock oidc-provider (memory adapter)
                        api     bearer reads (whoami with service and user tokens, users/me, users list)
                                against bare node:http
                        flows   full sign-in and refresh_token grant, against stock oidc-provider's own kept
                                through a knex adapter on the same engine (its login form verifying the same
                                argon2id hash as idt's); argon2id alone and stock's flows on its memory
                                adapter (no password check) beside them, for information; the sign-in with a
                                TOTP second step against idt's password sign-in; single sign-on through a
                                second idt started beside the measured one (the upstream: SQLite, its own
                                process and core when there are three; an organization with a verified domain
                                and an OpenID Connect connection to it, enabled for that row only) beside
                                idt's password sign-in, for information (select it with --scenario sso)
                        spread  client credentials spread over 10,000 clients, against stock
                                oidc-provider with a knex adapter on the same database engine
                        scale   the same paths at 100,000 users / 10,000 organizations / 100,000
                                memberships / 10,000 clients, against the empty database's rows; the
                                RSS after the token run over the 10,000 clients, against the stock
                                spread server's (run the spread group too)
                        scim-audit  an organization of 10,000 members: the SCIM Users list against the users
                                list of the same organization, same page of 20; its audit trail of 100,000
                                records exported (NDJSON, CSV) with the server's peak RSS, and verified
                                (seeds for 10–40 s per database first)
  --scenario <text>   measure only the idt scenarios whose title contains <text> (case-insensitive;
                      the baselines of their groups still run; env BENCH_SCENARIO)
  --no-scale          leave the scale group out (a quicker run); --scale puts it back
  --spread-clients <n> clients of the spread group and the scaled database (default 10000)
  --server <mode>     how the idt server runs (env BENCH_SERVER):
                        bundle  (default) the current sources and their npm dependencies bundled by esbuild into
                                bench/.build/ as examples/server's build bundles them for npm start, run by plain node
                        source  the TypeScript sources through tsx (adds ~50 MiB RSS: the loader thread)
                        dist    the built examples/server/dist (run \`npm run build\` first)
  --server-flags <f>  Node.js flags of the idt server processes, space-separated (default: the reference
                      server's, scripts/server-flags.mjs, as \`npm start\` runs it; '' for none; env
                      BENCH_SERVER_FLAGS). The baselines always run with Node.js's defaults.
  --server-env <v>    environment variables of the idt server processes, NAME=value space-separated (default:
                      the reference server's, scripts/server-flags.mjs, today MALLOC_ARENA_MAX=2; '' for none;
                      env BENCH_SERVER_ENV). The baselines run without them.
  --quiet <s>         before each measurement, wait up to <s> seconds for the machine to be idle
                      (under 0.25 busy cores over 2 s; default 0: do not wait; env BENCH_QUIET)
  --environment <e>   IDT_ENVIRONMENT of the idt servers: Production (default), Testing or Development
                      (Development turns rate limiting off: a way to measure what it costs; env BENCH_ENVIRONMENT)
  --profile           write a CPU profile of every idt server run (bench/profiles/) and print its hot spots
  --no-diagnostics    skip the diagnostic GET /health run (the HTTP pipeline alone)
  --no-pin            do not pin processes to cores even when taskset exists
  --json              print the results as JSON instead of a table
  --strict            exit 1 when a target is missed (failed requests and scenarios that could
                      not run always exit 1)
  --help

PostgreSQL: IDT_BENCH_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/postgres) must
allow creating databases; throwaway databases are created and dropped.`;

function parseArgs(argv) {
  const options = {
    duration: Number(process.env.BENCH_DURATION ?? 10),
    warmup: Number(process.env.BENCH_WARMUP ?? 3),
    connections: Number(process.env.BENCH_CONNECTIONS ?? 20),
    only: process.env.BENCH_ONLY ?? undefined,
    group: process.env.BENCH_GROUP ?? undefined,
    scenario: process.env.BENCH_SCENARIO ?? undefined,
    scale: undefined,
    spreadClients: 10_000,
    server: process.env.BENCH_SERVER ?? 'bundle',
    serverFlags:
      process.env.BENCH_SERVER_FLAGS === undefined ? [...SERVER_NODE_FLAGS] : splitFlags(process.env.BENCH_SERVER_FLAGS),
    serverEnv: process.env.BENCH_SERVER_ENV === undefined ? { ...SERVER_ENV } : envPairs(process.env.BENCH_SERVER_ENV),
    quiet: Number(process.env.BENCH_QUIET ?? 0),
    repeat: Number(process.env.BENCH_REPEAT ?? 1),
    environment: process.env.BENCH_ENVIRONMENT ?? 'Production',
    profile: false,
    diagnostics: true,
    pin: true,
    json: false,
    strict: false,
  };
  for (let i = 0; i < argv.length; i++) {
    // `--flag=value` or `--flag value`; the value may itself hold `=` (`--server-flags=--max-semi-space-size=8`).
    const at = argv[i].indexOf('=');
    const [flag, inline] = at === -1 ? [argv[i], undefined] : [argv[i].slice(0, at), argv[i].slice(at + 1)];
    const value = () => inline ?? argv[++i];
    switch (flag) {
      case '--duration':
        options.duration = Number(value());
        break;
      case '--warmup':
        options.warmup = Number(value());
        break;
      case '--connections':
        options.connections = Number(value());
        break;
      case '--only':
        options.only = value();
        break;
      case '--group':
        options.group = value();
        break;
      case '--scenario':
        options.scenario = value();
        break;
      case '--scale':
        options.scale = true;
        break;
      case '--no-scale':
        options.scale = false;
        break;
      case '--spread-clients':
        options.spreadClients = Number(value());
        break;
      case '--server':
        options.server = value();
        break;
      case '--server-flags':
        options.serverFlags = splitFlags(value() ?? '');
        break;
      case '--server-env':
        options.serverEnv = envPairs(value() ?? '');
        break;
      case '--environment':
        options.environment = value();
        break;
      case '--repeat':
        options.repeat = Number(value());
        break;
      case '--quiet':
        options.quiet = Number(value());
        break;
      case '--profile':
        options.profile = true;
        break;
      case '--no-diagnostics':
        options.diagnostics = false;
        break;
      case '--no-pin':
        options.pin = false;
        break;
      case '--json':
        options.json = true;
        break;
      case '--strict':
        options.strict = true;
        break;
      case '--help':
      case '-h':
        console.log(USAGE);
        process.exit(0);
        break;
      default:
        console.error(`Unknown option ${argv[i]}\n\n${USAGE}`);
        process.exit(2);
    }
  }
  const problems = [];
  if (!(options.duration > 0 && options.duration <= 600)) problems.push('--duration must be between 1 and 600 seconds');
  if (!(options.warmup >= 0 && options.warmup <= 120)) problems.push('--warmup must be between 0 and 120 seconds');
  if (!(Number.isInteger(options.connections) && options.connections > 0 && options.connections <= 1000))
    problems.push('--connections must be a whole number between 1 and 1000');
  if (options.only !== undefined && !['sqlite', 'postgres'].includes(options.only))
    problems.push('--only must be sqlite or postgres');
  const groups = options.group === undefined ? [...GROUPS] : options.group.split(',').map((group) => group.trim());
  const unknown = groups.filter((group) => !GROUPS.includes(group));
  if (unknown.length || groups.length === 0) problems.push(`--group takes a comma-separated list of ${GROUPS.join(', ')}`);
  if (options.scale === false) options.groups = new Set(groups.filter((group) => group !== 'scale'));
  else if (options.scale === true) options.groups = new Set([...groups, 'scale']);
  else options.groups = new Set(groups);
  if (!(Number.isInteger(options.spreadClients) && options.spreadClients >= 1 && options.spreadClients <= 1_000_000))
    problems.push('--spread-clients must be a whole number between 1 and 1000000');
  if (!(Number.isInteger(options.repeat) && options.repeat >= 1 && options.repeat <= 20))
    problems.push('--repeat must be a whole number between 1 and 20');
  if (!(options.quiet >= 0 && options.quiet <= 3600)) problems.push('--quiet must be between 0 and 3600 seconds');
  if (!['Production', 'Testing', 'Development'].includes(options.environment))
    problems.push('--environment must be Production, Testing or Development');
  if (!['bundle', 'source', 'dist'].includes(options.server)) problems.push('--server must be bundle, source or dist');
  if (options.serverFlags.some((flag) => !flag.startsWith('-')))
    problems.push('--server-flags takes Node.js flags, each starting with - (quote them as one argument)');
  if (options.serverEnv === undefined) problems.push('--server-env takes NAME=value pairs (quote them as one argument)');
  if (problems.length) {
    console.error(`${problems.join('\n')}\n\n${USAGE}`);
    process.exit(2);
  }
  return options;
}

const options = parseArgs(process.argv.slice(2));
const log = (message) => process.stderr.write(`[bench] ${message}\n`);

/**
 * The targets: issue 16's, with the sign-in, refresh and RSS-under-load rows
 * as issue 46 restated them. Ratios are requests/s over the baseline
 * measured in the same run; `scaled` is a scaled-database row over the same
 * path on the empty database (within 20 %); `rssTokenLoad` is an RSS over
 * the stock server's RSS measured in the same run (at most).
 */
const TARGETS = {
  tokens: { sqlite: 0.95, postgres: 0.9 }, // × stock oidc-provider (memory adapter), and p99 ≤ its p99
  spread: 1.2, // × stock oidc-provider with a knex adapter on the same engine, same 10,000 clients
  // × stock oidc-provider's own sign-in through the knex adapter on the same engine, its login form verifying
  // the same argon2id hash with idt's parameters, library and one-per-core concurrency
  signIn: 0.85,
  // × idt's password sign-in on the same engine: the same sign-in with a TOTP second step (issue 49)
  totpSignIn: 0.9,
  refresh: 1.3, // × stock oidc-provider's refresh grant keeping its tokens through the knex adapter, same engine
  bearer: 0.25, // × bare node:http (whoami with either token, users/me)
  list: { sqlite: 0.08, postgres: 0.05 }, // × bare node:http, the 20-row users list
  scaled: 0.8, // scaled database ≥ 0.8 × empty
  // RSS right after the token run over 10,000 clients at 100,000 users ≤ 1.2 × the stock knex spread
  // server's RSS right after its run over the same clients (same engine, same run)
  rssTokenLoad: 1.2,
  rssIdleMiB: 100,
  coldStartMs: 1000,
  // × the users list of the same organization and page size (issue 51): the SCIM Users list of 10,000 members
  scim: 0.5,
  // the server's peak RSS while it streams the export of 100,000 audit records (issue 51)
  auditExportRssMiB: 150,
};
const RATE_LIMIT = '100000000';
const POSTGRES_ADMIN_URL = process.env.IDT_BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const ADMIN = { email: 'bench-admin@example.com', password: 'correct horse battery staple' };
const SIGN_IN_CONCURRENCY = 4;
/**
 * Users with a TOTP authenticator for the TOTP sign-in row: a code works
 * once, so a user signs in at most twice per 30-second step (its current
 * and next code), then once per step. The pool lasts every round of the
 * measurement at up to about 60 sign-ins a second, warm-ups included (a
 * pool run dry would make the load generator wait for the next step).
 */
const TOTP_USERS = Math.min(
  4000,
  Math.max(100, Math.ceil((options.warmup + options.duration) * 30 * Math.max(1, options.repeat))),
);
/**
 * The single sign-on row's users, at the upstream, signing in in turn: the
 * first sign-in of each provisions it just in time at the downstream (in the
 * warm-up when it lasts a couple of seconds), every later one finds it.
 */
const SSO_USERS = 20;
/** The domain the downstream's organization verified; the single sign-on users' addresses are at it. */
const SSO_DOMAIN = 'sso.bench.example';
const SCALE = { users: 100_000, organizations: 10_000, memberships: 100_000, platformMembers: 45_000 };
const DEEP_PAGE = 2000;
/** The scim-audit group's organization: its active members, and the records of its audit chain. */
const SCIM_AUDIT = { members: 10_000, auditRecords: 100_000 };

// ---------------------------------------------------------------- cores

const cpuCount = typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length;
const hasTaskset = spawnSync('sh', ['-c', 'command -v taskset'], { encoding: 'utf8' }).status === 0;
const pinning = options.pin && hasTaskset && cpuCount >= 2;
const SERVER_CORE = '0';
const LOAD_CORE = '1';
/** The single sign-on row's upstream idt: a core of its own when pinning and there are three; else unpinned. */
const UPSTREAM_CORE = pinning && cpuCount >= 3 ? '2' : undefined;
const pinNote = pinning
  ? `server on core ${SERVER_CORE}, load generator on core ${LOAD_CORE} (taskset)`
  : `unpinned (${!options.pin ? '--no-pin' : !hasTaskset ? 'taskset not found' : `${cpuCount} core`})`;

/** The command line of a process, pinned to `core` when pinning is on. */
function pinned(core, args) {
  return pinning ? ['taskset', '-c', core, ...args] : args;
}

// ---------------------------------------------------------------- child processes

const children = new Set();
const cleanups = [];
let exiting = false;

/** Starts a child process whose output is kept (the last lines are shown when it fails). */
function startChild(name, argv, { env = {}, core } = {}) {
  if (exiting) throw new Error('the benchmark is shutting down');
  const [command, ...args] = core === undefined ? argv : pinned(core, argv);
  const child = spawn(command, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  const lines = [];
  const listeners = new Set();
  const push = (line) => {
    if (!line) return;
    lines.push(line);
    if (lines.length > 200) lines.shift();
    for (const listener of listeners) listener(line);
  };
  // A line may come in several chunks (a pipe hands out 64 KiB at a time): each stream keeps its unfinished line.
  const lineReader = (stream) => {
    let rest = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk) => {
      const parts = (rest + chunk).split('\n');
      rest = parts.pop() ?? '';
      for (const line of parts) push(line);
    });
    stream.on('end', () => push(rest));
  };
  lineReader(child.stdout);
  lineReader(child.stderr);
  // 'close', not 'exit': the streams are read to their end first (the last line is whole).
  const exited = new Promise((resolve) => child.once('close', (code, signal) => resolve({ code, signal })));
  const handle = {
    name,
    child,
    pid: child.pid,
    lines,
    exited,
    running: true,
    /** Resolves with the first output line matching `pattern`; rejects on exit or after `timeoutMs`. */
    waitForLine(pattern, timeoutMs) {
      const found = lines.find((line) => pattern.test(line));
      if (found) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          listeners.delete(listener);
          reject(new Error(`${name}: no "${pattern}" after ${timeoutMs} ms\n${tail(lines)}`));
        }, timeoutMs);
        const listener = (line) => {
          if (!pattern.test(line)) return;
          clearTimeout(timer);
          listeners.delete(listener);
          resolve(line);
        };
        listeners.add(listener);
        exited.then(({ code, signal }) => {
          clearTimeout(timer);
          if (listeners.delete(listener)) reject(new Error(`${name} exited (${signal ?? code})\n${tail(lines)}`));
        });
      });
    },
    /** SIGTERM, then SIGKILL after `graceMs`. */
    async stop(graceMs = 10_000) {
      if (handle.running) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
        await exited;
        clearTimeout(timer);
      }
      return exited;
    },
  };
  exited.then(() => {
    handle.running = false;
    children.delete(handle);
  });
  children.add(handle);
  return handle;
}

function tail(lines, count = 30) {
  return lines
    .slice(-count)
    .map((line) => `    | ${line.length > 400 ? `${line.slice(0, 400)} …` : line}`)
    .join('\n');
}

/** Runs a child to completion with a time bound; resolves with its output. */
async function runChild(name, argv, { env, core, timeoutMs }) {
  const handle = startChild(name, argv, { env, core });
  const timer = setTimeout(() => {
    log(`${name} did not finish within ${Math.round(timeoutMs / 1000)} s; killing it`);
    handle.child.kill('SIGKILL');
  }, timeoutMs);
  const { code, signal } = await handle.exited;
  clearTimeout(timer);
  if (code !== 0) throw new Error(`${name} failed (${signal ?? `exit ${code}`})\n${tail(handle.lines)}`);
  return handle.lines;
}

function killAllNow() {
  for (const handle of children) handle.child.kill('SIGKILL');
}

async function shutdown(code, reason) {
  if (exiting) return;
  exiting = true;
  if (reason) log(reason);
  for (const handle of children) handle.child.kill('SIGTERM');
  const deadline = setTimeout(() => {
    killAllNow();
    process.exit(code);
  }, 5000);
  await Promise.allSettled([...children].map((handle) => handle.stop(3000)));
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
  clearTimeout(deadline);
  process.exit(code);
}
process.on('SIGINT', () => void shutdown(130, 'interrupted; stopping child processes'));
process.on('SIGTERM', () => void shutdown(143, 'terminated; stopping child processes'));
process.on('exit', killAllNow);

// ---------------------------------------------------------------- helpers

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

function fetchWithTimeout(url, init = {}, timeoutMs = 15_000) {
  return fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs) });
}

/** Resident and peak resident memory of a process, in MiB (Linux /proc). */
function memoryOf(pid) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = (field) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
    return { rssMiB: kib('VmRSS') / 1024, peakRssMiB: kib('VmHWM') / 1024 };
  } catch {
    return { rssMiB: Number.NaN, peakRssMiB: Number.NaN };
  }
}

/** How long idle servers are watched for V8 to release the garbage of starting. */
const SETTLE_TIMEOUT_MS = 60_000;

/**
 * The memory of idle processes once it settled: each is watched until its RSS
 * fell at least 5 MiB below the first look and then held within 1 MiB for 2 s
 * (V8's memory reducer shrinks the heap some seconds into idleness), or until
 * 60 s passed. Resolves with each one's last sample and the seconds it took.
 */
async function settledMemory(pids) {
  const started = performance.now();
  const first = pids.map((pid) => memoryOf(pid).rssMiB);
  const state = pids.map((_, index) => ({ dropped: false, since: started, last: first[index], sample: undefined }));
  for (;;) {
    const now = performance.now();
    let pending = 0;
    pids.forEach((pid, index) => {
      const entry = state[index];
      if (entry.done) return;
      const sample = memoryOf(pid);
      if (!Number.isFinite(sample.rssMiB)) {
        Object.assign(entry, { done: true, sample });
        return;
      }
      if (sample.rssMiB <= first[index] - 5) entry.dropped = true;
      if (Math.abs(sample.rssMiB - entry.last) > 1) Object.assign(entry, { since: now, last: sample.rssMiB });
      entry.sample = sample;
      if (entry.dropped && now - entry.since >= 2000) entry.done = true;
      else pending++;
    });
    if (pending === 0 || now - started >= SETTLE_TIMEOUT_MS) break;
    await sleep(500);
  }
  const seconds = (performance.now() - started) / 1000;
  return state.map((entry) => ({ ...entry.sample, settledAfterS: seconds, settled: entry.done === true }));
}

const loadAverage = () => os.loadavg().map((value) => Number(value.toFixed(2)));

function decodeJwtHeader(token) {
  return JSON.parse(Buffer.from(String(token).split('.')[0] ?? '', 'base64url').toString('utf8'));
}

const TOKEN_BODY = 'grant_type=client_credentials&scope=users.read';

function tokenRequest(baseUrl, clientId, clientSecret) {
  return {
    url: `${baseUrl}/connect/token`,
    method: 'POST',
    headers: {
      authorization: basicAuth(clientId, clientSecret),
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: TOKEN_BODY,
  };
}

/** Fetches one token the way the load generator will, and checks it is an ES256 `at+jwt`. */
async function checkToken(request) {
  const response = await fetchWithTimeout(request.url, { method: 'POST', headers: request.headers, body: request.body });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`token request answered ${response.status}: ${text.slice(0, 500)}`);
  const { access_token: token, token_type: type } = JSON.parse(text);
  const header = decodeJwtHeader(token);
  if (type !== 'Bearer' || header.alg !== 'ES256' || !/^(application\/)?at\+jwt$/i.test(String(header.typ))) {
    throw new Error(`expected an ES256 at+jwt Bearer token, got ${type} ${JSON.stringify(header)}`);
  }
  return token;
}

/** Busy cores of the whole machine over `ms` (Linux /proc/stat), or undefined elsewhere. */
async function busyCores(ms = 2000) {
  const sample = () => {
    try {
      const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
      const idle = (fields[3] ?? 0) + (fields[4] ?? 0);
      return { busy: fields.reduce((sum, value) => sum + value, 0) - idle };
    } catch {
      return undefined;
    }
  };
  const before = sample();
  await new Promise((resolve) => setTimeout(resolve, ms));
  const after = sample();
  return before && after ? (after.busy - before.busy) / 100 / (ms / 1000) : undefined;
}

/** With --quiet, waits (bounded) until other processes leave the machine idle. */
async function waitForQuiet(name) {
  if (!(options.quiet > 0)) return;
  const deadline = Date.now() + options.quiet * 1000;
  let busy = await busyCores();
  while (busy !== undefined && busy > 0.25 && Date.now() < deadline) {
    log(`${name}: ${busy.toFixed(2)} cores busy with other work; waiting for a quieter machine`);
    await new Promise((resolve) => setTimeout(resolve, 3000));
    busy = await busyCores();
  }
  if (busy !== undefined && busy > 0.25)
    log(`${name}: still ${busy.toFixed(2)} cores busy after ${options.quiet} s; measuring anyway`);
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Runs one measurement in its own process and returns its figures: the load
 * generator of the scenario (bench/load.mjs, autocannon, by default; or
 * bench/load-flow.mjs) on the load core, or a baseline that measures itself
 * (bench/baseline-argon2.mjs) on the server core. `scenario.spec()` gives the
 * generator's options; `scenario.after(result)` sees the result (the refresh
 * chains carry on into the next round).
 */
async function measure(name, scenario, serverPid) {
  await waitForQuiet(name);
  // e.g. the spread scenarios use every client once, right before their warm-up; the single sign-on
  // scenario enables its connection.
  await scenario.before?.();
  const spec = {
    connections: options.connections,
    ...scenario.spec(),
    duration: options.duration,
    warmup: options.warmup,
    ...(serverPid ? { serverPid } : {}),
  };
  const script = scenario.script ?? 'bench/load.mjs';
  log(
    `${name}: warm-up ${options.warmup} s, then ${options.duration} s (${scenario.concurrencyNote ?? `${spec.connections} connections`})`,
  );
  const loadBefore = loadAverage();
  let lines;
  try {
    lines = await runChild(`${script} (${name})`, [process.execPath, script, JSON.stringify(spec)], {
      core: scenario.core ?? LOAD_CORE,
      timeoutMs: (options.warmup + options.duration + 90) * 1000,
    });
  } finally {
    // e.g. the single sign-on scenario disables the connection it enabled, whatever happened.
    await scenario.teardown?.();
  }
  const last = [...lines].reverse().find((line) => line.startsWith('{'));
  if (!last) throw new Error(`${name}: ${script} printed no result\n${tail(lines)}`);
  const result = { ...JSON.parse(last), loadBefore, loadAfter: loadAverage() };
  // autocannon does not keep bodies: show what a failing request answers now.
  if (result.failed > 0 && !result.failures && scenario.request) {
    result.failures = [await sample(scenario.request).catch((error) => ({ status: 0, message: error.message }))];
  }
  scenario.after?.(result);
  return result;
}

/** Sends one request of a scenario (the first credential of a rotation) and returns its status and the start of its body. */
async function sample(request) {
  const headers = { ...request.headers };
  if (request.authorizationsFile) headers.authorization = JSON.parse(readFileSync(request.authorizationsFile, 'utf8'))[0];
  const answer = await send(request.url, { method: request.method, headers, body: request.body, timeoutMs: 15_000 });
  return { status: answer.status, body: answer.body.slice(0, 500) };
}
// ---------------------------------------------------------------- the idt server

let bundlePath;

/**
 * Bundles the reference server from the current sources (workspace packages
 * resolved to their `src/` through the tsconfig paths) into bench/.build/,
 * with a source map for the profile summary. Its npm dependencies are bundled
 * as examples/server's build bundles them for `npm start`
 * (scripts/server-bundle.mjs). Nothing in the packages' `dist/` is read or
 * written.
 */
async function buildBundle() {
  const { build } = await import('esbuild');
  const dir = join(ROOT, 'bench', '.build', `${process.pid}`);
  mkdirSync(dir, { recursive: true });
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
  const outfile = join(dir, 'main.mjs');
  await build({
    entryPoints: [join(ROOT, 'examples/server/src/main.ts')],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    sourcemap: 'linked',
    tsconfig: join(ROOT, 'tsconfig.json'),
    logLevel: 'warning',
    ...SERVER_BUNDLE_OPTIONS,
  });
  return outfile;
}

/** A space-separated option value (`--server-flags`, `--server-env`) as its parts (split on whitespace; empty: none). */
function splitFlags(text) {
  return text.split(/\s+/).filter(Boolean);
}

/** `--server-env`'s value as variables (`NAME=value`, split on whitespace; empty: none); undefined when a pair is not one. */
function envPairs(text) {
  const pairs = splitFlags(text).map((entry) => /^([A-Za-z_][A-Za-z0-9_]*)=(.*)$/s.exec(entry));
  return pairs.every(Boolean) ? Object.fromEntries(pairs.map(([, name, value]) => [name, value])) : undefined;
}

/** The environment of an idt server process: `--server-env`'s variables (the reference server's by default), then `env`. */
function serverEnv(env = {}) {
  return { ...options.serverEnv, ...env };
}

/** How an idt server process starts: node with the server flags (the reference server's by default), then the server. */
function serverArgv(command, extra = []) {
  const node = [process.execPath, ...options.serverFlags, ...extra];
  if (options.server === 'dist') return [...node, 'examples/server/dist/main.js', command];
  if (options.server === 'bundle') return [...node, bundlePath, command];
  return [...node, '--import', 'tsx', 'examples/server/src/main.ts', command];
}

/** Creates the throwaway database of one idt run; returns its URL and how to remove it. */
let databaseCount = 0;

async function createBenchDatabase(kind, dir, label = 'idt') {
  if (kind === 'sqlite') return { url: `sqlite:${join(dir, `${label}.sqlite`)}`, drop: async () => undefined };
  const { default: pg } = await import('pg');
  const name = `${label}_bench_${process.pid}_${Date.now().toString(36)}_${++databaseCount}`;
  const admin = new pg.Client({ connectionString: POSTGRES_ADMIN_URL, connectionTimeoutMillis: 5000 });
  await admin.connect();
  try {
    await admin.query(`create database ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(POSTGRES_ADMIN_URL);
  url.pathname = `/${name}`;
  return {
    url: url.href,
    drop: async () => {
      const client = new pg.Client({ connectionString: POSTGRES_ADMIN_URL, connectionTimeoutMillis: 5000 });
      await client.connect();
      try {
        await client.query(`drop database if exists ${name} with (force)`);
      } finally {
        await client.end();
      }
    },
  };
}

async function postgresAvailable() {
  try {
    const { default: pg } = await import('pg');
    const client = new pg.Client({ connectionString: POSTGRES_ADMIN_URL, connectionTimeoutMillis: 3000 });
    await client.connect();
    await client.end();
    return true;
  } catch (error) {
    log(`PostgreSQL at ${POSTGRES_ADMIN_URL.replace(/\/\/[^@/]*@/, '//…@')} is not reachable (${error.message}); skipping it`);
    return false;
  }
}

/**
 * Prepares one idt deployment: a fresh database, migrations, the first
 * administrator over HTTP, then (bench/setup-clients.ts) a service-account
 * client with `users.read` and an application client for the sign-in and
 * refresh flows. With `upstream` (the single sign-on row), it listens on the
 * port the upstream's client names in its redirect URI, and
 * bench/setup-sso.ts gives it the organization of the verified domain, its
 * (disabled) connection to the upstream and that organization's application
 * (`deployment.sso`, or `{ error }` when that failed).
 */
async function prepareIdt(kind, upstream) {
  const dir = mkdtempSync(join(os.tmpdir(), `idt-bench-${kind}-`));
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
  const database = await createBenchDatabase(kind, dir);
  cleanups.push(database.drop);
  const port = upstream?.downstreamPorts[kind] ?? (await freePort());
  const baseUrl = `http://127.0.0.1:${port}`;
  const env = {
    ...idtEnv(database.url, dir, port),
    // The single sign-on row's upstream is an http issuer on loopback.
    ...(upstream ? { IDT_SSO_ALLOW_PRIVATE_HOSTS: 'true' } : {}),
  };
  log(`idt/${kind}: migrating ${kind === 'sqlite' ? database.url : 'a throwaway PostgreSQL database'}`);
  await runChild(`idt migrate (${kind})`, serverArgv('migrate'), { env: serverEnv(env), timeoutMs: 120_000 });
  const organizationId = await setupAdmin(`idt/${kind}`, env, baseUrl);

  const lines = await runChild(
    `register clients (${kind})`,
    [
      process.execPath,
      '--import',
      'tsx',
      'bench/setup-clients.ts',
      organizationId,
      ADMIN.email,
      String(options.connections),
      String(options.groups.has('flows') ? TOTP_USERS : 0),
    ],
    { env, timeoutMs: 300_000 },
  );
  const registration = JSON.parse([...lines].reverse().find((line) => line.startsWith('{')) ?? 'null');
  if (!registration?.clientSecret || !registration.app?.clientSecret || registration.chainUsers?.length !== options.connections)
    throw new Error(`idt/${kind}: client registration printed nothing usable\n${tail(lines)}`);
  let sso;
  if (upstream) {
    // The single sign-on row only: its failure leaves the other rows of the deployment.
    try {
      const ssoLines = await runChild(
        `single sign-on setup (${kind})`,
        [
          process.execPath,
          '--import',
          'tsx',
          'bench/setup-sso.ts',
          'downstream',
          organizationId,
          SSO_DOMAIN,
          upstream.baseUrl,
          upstream.clientId,
          upstream.clientSecret,
        ],
        { env, timeoutMs: 120_000 },
      );
      sso = JSON.parse([...ssoLines].reverse().find((line) => line.startsWith('{')) ?? 'null');
      if (!sso?.connectionId || !sso.app?.clientSecret)
        throw new Error(`single sign-on setup printed nothing usable\n${tail(ssoLines)}`);
    } catch (error) {
      log(`idt/${kind}: ${error.message}`);
      sso = { error: error.message };
    }
  }
  return {
    kind,
    env,
    dir,
    baseUrl,
    ...registration,
    ...(sso ? { sso } : {}),
    tokenRequest: tokenRequest(baseUrl, registration.clientId, registration.clientSecret),
    seeded: { spread: false, scale: false },
    seeding: {},
    coldStarts: [],
    idleRss: [],
    loadRss: [],
  };
}

/** The environment of an idt server on `databaseUrl`, listening on `port` of 127.0.0.1 (its issuer). */
function idtEnv(databaseUrl, dir, port) {
  const baseUrl = `http://127.0.0.1:${port}`;
  return {
    NODE_ENV: 'production',
    IDT_ENVIRONMENT: options.environment,
    IDT_DATABASE_URL: databaseUrl,
    IDT_DATA_DIR: dir,
    PORT: String(port),
    HOST: '127.0.0.1',
    IDT_ISSUER: baseUrl,
    IDT_KEY_ENCRYPTION_SECRET: randomBytes(32).toString('base64url'),
    // Production requires an SMTP URL; nothing is sent during the benchmark.
    IDT_SMTP_URL: 'smtp://127.0.0.1:2525',
    IDT_LOG_LEVEL: 'warn',
    // One token serves a whole group, however long it runs.
    IDT_ACCESS_TOKEN_MINUTES: '1440',
    IDT_RATE_LIMIT_AUTH_PERMIT_LIMIT: RATE_LIMIT,
    IDT_RATE_LIMIT_UPLOAD_PERMIT_LIMIT: RATE_LIMIT,
    IDT_RATE_LIMIT_REGISTRATION_PERMIT_LIMIT: RATE_LIMIT,
    IDT_RATE_LIMIT_GLOBAL_PERMIT_LIMIT: RATE_LIMIT,
  };
}

/** Starts a freshly migrated idt server once to create the first administrator over HTTP; resolves with the platform organization. */
async function setupAdmin(name, env, baseUrl) {
  const server = startChild(`${name} server (setup)`, serverArgv('serve'), { env: serverEnv(env) });
  try {
    await server.waitForLine(/listening on/, 60_000);
    const setup = await fetchWithTimeout(`${baseUrl}/v1/identity/setup/admin`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        email: ADMIN.email,
        password: ADMIN.password,
        firstName: 'Bench',
        lastName: 'Admin',
        organizationName: 'Bench Platform',
      }),
    });
    if (setup.status !== 201) throw new Error(`${name}: setup answered ${setup.status}: ${await setup.text()}`);
    const { organizationId } = await setup.json();
    return organizationId;
  } finally {
    await server.stop();
  }
}

/**
 * Prepares the upstream idt of the single sign-on row: the identity
 * provider of the downstream's organization, another idt on SQLite in its
 * own process. Its engine is not what the row measures (the downstream's
 * is), so one SQLite upstream serves the SQLite and the PostgreSQL rows
 * alike (the same upstream for both, no second PostgreSQL database); it
 * verifies the password of every sign-in (argon2id, as a real upstream
 * would), on a core of its own when there is one. Picks the downstreams'
 * ports first: its client's redirect URIs name their callbacks.
 */
async function prepareUpstream(kinds) {
  const dir = mkdtempSync(join(os.tmpdir(), 'idt-bench-upstream-'));
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
  const ports = new Set();
  const distinctPort = async () => {
    for (;;) {
      const port = await freePort();
      if (!ports.has(port)) {
        ports.add(port);
        return port;
      }
    }
  };
  const port = await distinctPort();
  const downstreamPorts = {};
  for (const kind of kinds) downstreamPorts[kind] = await distinctPort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const env = idtEnv(`sqlite:${join(dir, 'upstream.sqlite')}`, dir, port);
  log('idt upstream (SQLite): migrating');
  await runChild('idt migrate (upstream)', serverArgv('migrate'), { env: serverEnv(env), timeoutMs: 120_000 });
  const organizationId = await setupAdmin('idt upstream', env, baseUrl);
  const lines = await runChild(
    'single sign-on setup (upstream)',
    [
      process.execPath,
      '--import',
      'tsx',
      'bench/setup-sso.ts',
      'upstream',
      organizationId,
      ADMIN.email,
      String(SSO_USERS),
      SSO_DOMAIN,
      ...kinds.map((kind) => `http://127.0.0.1:${downstreamPorts[kind]}/sso/oidc/callback`),
    ],
    { env, timeoutMs: 120_000 },
  );
  const registration = JSON.parse([...lines].reverse().find((line) => line.startsWith('{')) ?? 'null');
  if (!registration?.clientSecret || registration.users?.length !== SSO_USERS)
    throw new Error(`idt upstream: setup printed nothing usable\n${tail(lines)}`);
  return { env, baseUrl, downstreamPorts, ...registration, server: undefined };
}

/** Starts the upstream idt (on UPSTREAM_CORE when pinning and there are three cores) and waits for its /health. */
async function startUpstream(upstream) {
  const server = startChild('idt upstream (SQLite)', serverArgv('serve'), {
    env: serverEnv(upstream.env),
    ...(UPSTREAM_CORE ? { core: UPSTREAM_CORE } : {}),
  });
  await untilHealthy(server, `${upstream.baseUrl}/health`, performance.now());
  upstream.server = server;
  log(`idt upstream (SQLite) listening at ${upstream.baseUrl}${UPSTREAM_CORE ? ` on core ${UPSTREAM_CORE}` : ''}`);
}

/** Runs bench/seed-scale.ts against a deployment's database (no server of it may be running). */
async function seed(deployment, label, args) {
  log(`idt/${deployment.kind}: seeding ${label}`);
  const lines = await runChild(
    `seed ${label} (${deployment.kind})`,
    [process.execPath, '--import', 'tsx', 'bench/seed-scale.ts', '--organization', deployment.organizationId, ...args],
    { env: deployment.env, timeoutMs: 600_000 },
  );
  const summary = JSON.parse([...lines].reverse().find((line) => line.startsWith('{')) ?? 'null');
  if (!summary) throw new Error(`idt/${deployment.kind}: seeding ${label} printed nothing usable\n${tail(lines)}`);
  log(`idt/${deployment.kind}: seeded ${label} in ${summary.seconds} s (${JSON.stringify(summary.timings)})`);
  deployment.seeding[label] = summary;
  return summary;
}

/** Inserts the spread group's clients (once per deployment). */
async function seedSpreadClients(deployment) {
  if (deployment.seeded.spread) return;
  await seed(deployment, 'clients', [
    '--users',
    '0',
    '--organizations',
    '0',
    '--memberships',
    '0',
    '--clients-file',
    spreadFiles().clientsFile,
  ]);
  deployment.seeded.spread = true;
}

/** Inserts the scale run's users, organizations and memberships (once per deployment), after the clients. */
async function seedScale(deployment) {
  await seedSpreadClients(deployment);
  if (deployment.seeded.scale) return;
  await seed(deployment, 'users, organizations, memberships', [
    '--users',
    String(SCALE.users),
    '--organizations',
    String(SCALE.organizations),
    '--memberships',
    String(SCALE.memberships),
    '--platform-members',
    String(SCALE.platformMembers),
    '--clients',
    '0',
  ]);
  deployment.seeded.scale = true;
}

/**
 * Seeds the scim-audit group's organization (once per deployment; no server of it may be running):
 * SCIM_AUDIT.members active members, a service account of that organization, and SCIM_AUDIT.auditRecords
 * records in its audit chain, written through the core's trail (bench/seed-scim-audit.ts).
 */
async function seedScimAudit(deployment) {
  if (deployment.scimAudit) return;
  const label = 'scim/audit organization';
  log(`idt/${deployment.kind}: seeding the ${label}`);
  const lines = await runChild(
    `seed ${label} (${deployment.kind})`,
    [
      process.execPath,
      '--import',
      'tsx',
      'bench/seed-scim-audit.ts',
      '--members',
      String(SCIM_AUDIT.members),
      '--audit-records',
      String(SCIM_AUDIT.auditRecords),
    ],
    { env: deployment.env, timeoutMs: 600_000 },
  );
  const summary = JSON.parse([...lines].reverse().find((line) => line.startsWith('{')) ?? 'null');
  if (!summary?.organizationId || !summary.clientSecret)
    throw new Error(`idt/${deployment.kind}: seeding the ${label} printed nothing usable\n${tail(lines)}`);
  log(`idt/${deployment.kind}: seeded the ${label} in ${summary.seconds} s (${JSON.stringify(summary.timings)})`);
  deployment.seeding[label] = { seconds: summary.seconds, timings: summary.timings };
  deployment.scimAudit = summary;
}

let spreadFilesMemo;

/**
 * The spread clients' credentials (one file, the same clients for every
 * database and for the stock knex baseline) and their `Authorization`
 * headers in rotation order (for bench/load.mjs).
 */
function spreadFiles() {
  if (spreadFilesMemo) return spreadFilesMemo;
  const dir = mkdtempSync(join(os.tmpdir(), 'idt-bench-spread-'));
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
  const clients = Array.from({ length: options.spreadClients }, (_, index) => ({
    clientId: `sa-bench-spread-${String(index).padStart(5, '0')}`,
    clientSecret: randomBytes(32).toString('base64url'),
  }));
  const clientsFile = join(dir, 'clients.json');
  const authorizationsFile = join(dir, 'authorizations.json');
  writeFileSync(clientsFile, JSON.stringify(clients));
  writeFileSync(authorizationsFile, JSON.stringify(clients.map((client) => basicAuth(client.clientId, client.clientSecret))));
  spreadFilesMemo = { dir, clients, clientsFile, authorizationsFile };
  return spreadFilesMemo;
}

/** With --profile: the node flags that write a CPU profile of a server into a fresh bench/profiles/ directory. */
function profiling(label) {
  if (!options.profile) return { extra: [], profileDir: undefined };
  const profileDir = join(ROOT, 'bench', 'profiles', `${new Date().toISOString().replace(/[:.]/g, '-')}-${label}`);
  mkdirSync(profileDir, { recursive: true });
  // Keep the bundle's source map beside the profile: bench/.build/ is removed at exit.
  if (bundlePath && label !== 'tokens-baseline') copyFileSync(`${bundlePath}.map`, join(profileDir, 'main.mjs.map'));
  return { extra: ['--cpu-prof', `--cpu-prof-dir=${profileDir}`], profileDir };
}

/** Stops a server and, with --profile, summarizes its CPU profile into the report. */
async function stopServer(server, profileDir, scenarioId) {
  const { code, signal } = await server.stop(15_000);
  if (code !== 0 && code !== null) log(`${server.name} exited with ${signal ?? code}\n${tail(server.lines, 10)}`);
  if (!profileDir) return;
  const file = readdirSync(profileDir).find((name) => name.endsWith('.cpuprofile'));
  if (!file) {
    log(`${server.name}: no CPU profile was written in ${profileDir}`);
    return;
  }
  profiles.push({ scenario: scenarioId, ...summarizeProfile(join(profileDir, file), 20) });
}

/**
 * Starts the idt server on the server core (profiled with --profile) and
 * waits until `GET /health` answers 200; the time from spawning the process
 * to that answer is the server's cold start.
 */
async function startIdt(deployment, label) {
  const { extra, profileDir } = profiling(label);
  const spawnedAt = performance.now();
  const server = startChild(`idt server (${label})`, serverArgv('serve', extra), {
    env: serverEnv(deployment.env),
    core: SERVER_CORE,
  });
  let listeningMs;
  server
    .waitForLine(/listening on/, 60_000)
    .then(() => {
      listeningMs = performance.now() - spawnedAt;
    })
    .catch(() => undefined);
  const coldStartMs = await untilHealthy(server, `${deployment.baseUrl}/health`, spawnedAt);
  deployment.coldStarts.push(coldStartMs);
  log(
    `${server.name}: first 200 on /health ${Math.round(coldStartMs)} ms after spawning it${listeningMs === undefined ? '' : ` (its "listening on" line after ${Math.round(listeningMs)} ms)`}`,
  );
  return { server, profileDir, deployment };
}

/** Polls `url` until it answers 200; resolves with the milliseconds since `since`. */
async function untilHealthy(server, url, since, timeoutMs = 60_000) {
  for (;;) {
    if (!server.running) throw new Error(`${server.name} exited before answering\n${tail(server.lines)}`);
    const answer = await send(url, { timeoutMs: 2000 }).catch(() => undefined);
    if (answer?.status === 200) return performance.now() - since;
    if (performance.now() - since > timeoutMs) {
      await server.stop(5000);
      throw new Error(
        `${server.name}: no 200 on ${url} within ${timeoutMs} ms (last: ${answer ? answer.status : 'no answer'})\n${tail(server.lines)}`,
      );
    }
    await sleep(5);
  }
}

// ---------------------------------------------------------------- scenarios

const results = [];
const profiles = [];
/** The single sign-on row's upstream idt (prepared when the flows group runs it), and why it is not there. */
let ssoUpstream;
let ssoUpstreamError;
/** Spawn-to-first-200 of the bare node:http baseline: the cold-start floor of the machine. */
const bareColdStarts = [];

const labelOf = (kind) => (kind === 'sqlite' ? 'SQLite' : 'Postgres');

/** GETs `url` once and checks it answers 200 (and `check` holds for its JSON); returns the body size. */
async function probe(url, headers = {}, check) {
  const answer = await send(url, { headers, timeoutMs: 15_000 });
  if (answer.status !== 200) throw new Error(`GET ${url} answered ${answer.status}: ${answer.body.slice(0, 500)}`);
  if (check) {
    let body;
    try {
      body = JSON.parse(answer.body);
    } catch {
      body = undefined;
    }
    const problem = check(body);
    if (problem) throw new Error(`GET ${url}: ${problem}: ${answer.body.slice(0, 500)}`);
  }
  return Buffer.byteLength(answer.body);
}

/** Runs `check` on a started server; stops the server when it fails. */
async function checked(server, check) {
  try {
    return await check();
  } catch (error) {
    await server.stop(5000);
    throw error;
  }
}

/** An autocannon scenario (bench/load.mjs) for one request. */
function httpScenario(fields) {
  return { ...fields, spec: () => fields.request };
}

/**
 * Signs each of `emails` in once (authorization code + PKCE through the
 * sign-in pages, SIGN_IN_CONCURRENCY at a time) with the deployment's
 * application client; resolves with the token answers, in order. Every
 * bench user has the administrator's password.
 */
async function signInUsers(deployment, emails) {
  const agent = createAgent(SIGN_IN_CONCURRENCY);
  const answers = new Array(emails.length);
  let next = 0;
  const worker = async () => {
    while (next < emails.length) {
      const index = next++;
      answers[index] = await signIn({
        baseUrl: deployment.baseUrl,
        ...deployment.app,
        email: emails[index],
        password: ADMIN.password,
        agent,
      });
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(emails.length, SIGN_IN_CONCURRENCY) }, worker));
  } finally {
    agent.destroy();
  }
  for (const answer of answers) {
    if (!answer.access_token || !answer.refresh_token)
      throw new Error(
        `idt/${deployment.kind}: the sign-in returned no access or refresh token: ${JSON.stringify(Object.keys(answer))}`,
      );
  }
  return answers;
}

/** The stock oidc-provider baseline with its memory adapter (tokens group). */
async function startStockProvider() {
  const port = await freePort();
  const clientId = 'bench-client';
  const clientSecret = randomBytes(32).toString('base64url');
  const { extra, profileDir } = profiling('tokens-baseline');
  const server = startChild('stock oidc-provider', [process.execPath, ...extra, 'bench/baseline-oidc.mjs', String(port)], {
    env: { NODE_ENV: 'production', BENCH_CLIENT_ID: clientId, BENCH_CLIENT_SECRET: clientSecret },
    core: SERVER_CORE,
  });
  const request = tokenRequest(`http://127.0.0.1:${port}`, clientId, clientSecret);
  await checked(server, async () => {
    await server.waitForLine(/^listening/, 30_000);
    await checkToken(request);
  });
  return {
    server,
    profileDir,
    scenarios: [
      httpScenario({
        id: 'tokens-baseline',
        rank: 0,
        scenario: 'client credentials · stock oidc-provider (memory adapter)',
        baseline: true,
        request,
      }),
    ],
  };
}

/** The stock oidc-provider baseline with the knex adapter over `kind`, holding the spread clients (spread group). */
async function startStockKnex(kind) {
  const port = await freePort();
  const files = spreadFiles();
  const database = await createBenchDatabase(kind, files.dir, 'stock');
  cleanups.push(database.drop);
  const { extra, profileDir } = profiling(`spread-baseline-${kind}`);
  const server = startChild(
    `stock oidc-provider (knex, ${kind})`,
    [process.execPath, ...extra, 'bench/baseline-oidc.mjs', String(port)],
    {
      env: { NODE_ENV: 'production', BENCH_DATABASE_URL: database.url, BENCH_CLIENTS_FILE: files.clientsFile },
      core: SERVER_CORE,
    },
  );
  const baseUrl = `http://127.0.0.1:${port}`;
  const request = { ...tokenRequest(baseUrl, 'unused', 'unused'), authorizationsFile: files.authorizationsFile };
  await checked(server, async () => {
    await server.waitForLine(/^listening/, 180_000);
    for (const client of [files.clients[0], files.clients.at(-1)])
      await checkToken(tokenRequest(baseUrl, client.clientId, client.clientSecret));
  });
  return {
    server,
    profileDir,
    scenarios: [
      httpScenario({
        id: `spread-baseline-${kind}`,
        kind,
        rank: 0,
        scenario: `client credentials over ${options.spreadClients.toLocaleString('en-US')} clients · stock oidc-provider (knex adapter, ${labelOf(kind)})`,
        baseline: true,
        request,
        before: () => primeSpread(`stock oidc-provider (knex, ${kind})`, baseUrl),
      }),
    ],
  };
}

/** The bare node:http baseline server (api group). */
async function startBareHttp() {
  const port = await freePort();
  const { extra, profileDir } = profiling('api-baseline');
  const spawnedAt = performance.now();
  const server = startChild('bare node:http', [process.execPath, ...extra, 'bench/baseline-http.mjs', String(port)], {
    env: { NODE_ENV: 'production' },
    core: SERVER_CORE,
  });
  const request = { url: `http://127.0.0.1:${port}/v1/identity/users`, method: 'GET' };
  // The floor of a cold start on this machine: a Node.js process with nothing but node:http.
  bareColdStarts.push(await untilHealthy(server, request.url, spawnedAt, 30_000));
  const responseBytes = await checked(server, () => probe(request.url));
  return {
    server,
    profileDir,
    scenarios: [
      httpScenario({
        id: 'api-baseline',
        rank: 0,
        scenario: 'GET JSON · bare node:http',
        baseline: true,
        request,
        responseBytes,
      }),
    ],
  };
}

/** The argon2id baseline of the sign-in: verification alone, pinned to the server core (flows group). */
async function startArgon2Baseline(deployments) {
  const hash = deployments.find((deployment) => deployment.adminPasswordHash)?.adminPasswordHash;
  return {
    server: null,
    scenarios: [
      {
        id: 'signin-baseline',
        rank: 0,
        scenario: `argon2id verify alone, ${SIGN_IN_CONCURRENCY} in flight, one core${hash ? ' (the admin’s stored hash)' : ''}`,
        baseline: true,
        script: 'bench/baseline-argon2.mjs',
        core: SERVER_CORE,
        concurrencyNote: `${SIGN_IN_CONCURRENCY} verifications in flight`,
        spec: () => ({ hash, password: ADMIN.password, concurrency: SIGN_IN_CONCURRENCY }),
      },
      {
        // How idt's hasher verifies on one core (one computation per core): reported beside the ratio.
        id: 'signin-baseline-serial',
        rank: 0,
        scenario: `argon2id verify alone, one at a time, one core${hash ? ' (the admin’s stored hash)' : ''}`,
        baseline: true,
        script: 'bench/baseline-argon2.mjs',
        core: SERVER_CORE,
        concurrencyNote: '1 verification in flight',
        spec: () => ({ hash, password: ADMIN.password, concurrency: 1 }),
      },
    ],
  };
}

/** Targets of the rows that compare with a baseline of the same run. */
const targetOf = {
  tokens: (kind) => ({ ratio: TARGETS.tokens[kind], p99: true, compare: 'tokens-baseline' }),
  spread: (kind) => ({ ratio: TARGETS.spread, compare: `spread-baseline-${kind}` }),
  bearer: () => ({ ratio: TARGETS.bearer, compare: 'api-baseline' }),
  list: (kind) => ({ ratio: TARGETS.list[kind], compare: 'api-baseline' }),
  // Over stock oidc-provider's stored sign-in with argon2id on the same engine; the argon2id rows and the
  // memory adapter's flow are in the row's note.
  signIn: (kind) => ({ ratio: TARGETS.signIn, compare: stockFlow('signin', kind).id }),
  // Over idt's own password sign-in on the same engine, measured in the same run.
  totpSignIn: (kind) => ({ ratio: TARGETS.totpSignIn, compare: `signin-${kind}` }),
  // Beside idt's own password sign-in on the same engine, for information (no target).
  ssoSignIn: (kind) => ({ compare: `signin-${kind}` }),
  // Over stock oidc-provider keeping its tokens through the knex adapter on the same engine; the memory
  // adapter's grant is in the row's note.
  refresh: (kind) => ({ ratio: TARGETS.refresh, compare: stockFlow('refresh', kind).id }),
  scaled: (id) => ({ ratio: TARGETS.scaled, compare: id, scaled: true }),
  // Over the users list of the same organization, same page size, same server and run (issue 51).
  scim: (kind) => ({ ratio: TARGETS.scim, compare: `scim-users-list-${kind}` }),
  // The server's peak RSS while it streams the whole export (issue 51).
  auditExport: () => ({ rssBelowMiB: TARGETS.auditExportRssMiB }),
};

/** An idt server for the client-credentials scenario, one client (tokens group). */
async function startIdtTokens(deployment) {
  const running = await startIdt(deployment, `tokens-${deployment.kind}`);
  await checked(running.server, () => checkToken(deployment.tokenRequest));
  return {
    ...running,
    scenarios: [
      httpScenario({
        id: `tokens-${deployment.kind}`,
        kind: deployment.kind,
        rank: 1,
        scenario: `client credentials · idt/${labelOf(deployment.kind)}`,
        request: deployment.tokenRequest,
        ...targetOf.tokens(deployment.kind),
      }),
    ],
  };
}

/** The client-credentials request rotating over the spread clients. */
function spreadRequest(deployment) {
  return { ...tokenRequest(deployment.baseUrl, 'unused', 'unused'), authorizationsFile: spreadFiles().authorizationsFile };
}

/**
 * Uses every spread client once, 20 requests in flight, right before each measured run of a
 * spread server (idt and the stock baseline alike; the scenario's `before`): the measurement
 * is the steady state of a deployment whose clients are all in use, not the first use of
 * each. Priming when the server started instead let the servers measured later sit idle for
 * a minute or more first, past idt's client-instance idle expiry (60 s), so they measured the
 * reload of every client. Logs how fast the priming went (the first use, on the first round).
 */
const primed = new Set();

async function primeSpread(name, baseUrl) {
  const { clients } = spreadFiles();
  const agent = createAgent(20);
  const started = performance.now();
  let next = 0;
  const worker = async () => {
    while (next < clients.length) {
      const client = clients[next++];
      const answer = await send(`${baseUrl}/connect/token`, {
        method: 'POST',
        agent,
        headers: {
          authorization: basicAuth(client.clientId, client.clientSecret),
          'content-type': 'application/x-www-form-urlencoded',
        },
        body: TOKEN_BODY,
      });
      if (answer.status !== 200)
        throw new Error(`${name}: priming ${client.clientId} answered ${answer.status}: ${String(answer.body).slice(0, 300)}`);
    }
  };
  await Promise.all(Array.from({ length: 20 }, worker));
  agent.destroy();
  const seconds = (performance.now() - started) / 1000;
  log(
    `${name}: every one of ${clients.length.toLocaleString('en-US')} clients used once in ${seconds.toFixed(1)} s (${Math.round(clients.length / seconds)}/s, ${primed.has(name) ? 'again before this round' : 'first use'})`,
  );
  primed.add(name);
}

/** Checks that the first and the last spread client get a token. */
async function checkSpreadClients(deployment) {
  const { clients } = spreadFiles();
  for (const client of [clients[0], clients.at(-1)])
    await checkToken(tokenRequest(deployment.baseUrl, client.clientId, client.clientSecret));
}

/** An idt server for client credentials spread over the seeded clients (spread group). */
async function startIdtSpread(deployment) {
  const running = await startIdt(deployment, `spread-${deployment.kind}`);
  await checked(running.server, async () => {
    await checkSpreadClients(deployment);
  });
  return {
    ...running,
    scenarios: [
      httpScenario({
        id: `spread-${deployment.kind}`,
        kind: deployment.kind,
        rank: 1,
        scenario: `client credentials over ${options.spreadClients.toLocaleString('en-US')} clients · idt/${labelOf(deployment.kind)}`,
        request: spreadRequest(deployment),
        ...targetOf.spread(deployment.kind),
        before: () => primeSpread(`idt/${labelOf(deployment.kind)} spread`, deployment.baseUrl),
      }),
    ],
  };
}

/**
 * The bearer reads of one idt server: whoami with the service account's
 * and with a user's token (the bench administrator, signed in through the
 * authorization-code flow), users/me, the users list; with `scaled`, also
 * page 2,000 of the list, and every row compares with the empty database.
 */
async function readScenarios(deployment, scaled) {
  const kind = deployment.kind;
  const at = scaled ? ' at scale' : '';
  const idOf = (path) => (scaled ? `scale-${path}-${kind}` : `${path}-${kind}`);
  const serviceToken = await checkToken(deployment.tokenRequest);
  const [user] = await signInUsers(deployment, [ADMIN.email]);
  const service = { authorization: `Bearer ${serviceToken}` };
  const person = { authorization: `Bearer ${user.access_token}` };
  const base = deployment.baseUrl;
  const list = (page) => `${base}/v1/identity/users?page=${page}&pageSize=20`;
  const reads = [
    {
      path: 'whoami-service',
      rank: 1,
      title: 'GET /v1/identity/auth/whoami (service-account token)',
      url: `${base}/v1/identity/auth/whoami`,
      headers: service,
      check: (body) => (body?.kind === 'service' ? undefined : 'expected kind "service"'),
      target: targetOf.bearer(kind),
    },
    {
      path: 'whoami-user',
      rank: 2,
      title: 'GET /v1/identity/auth/whoami (user token)',
      url: `${base}/v1/identity/auth/whoami`,
      headers: person,
      check: (body) => (body?.kind === 'user' ? undefined : 'expected kind "user"'),
      target: targetOf.bearer(kind),
    },
    {
      path: 'me',
      rank: 3,
      title: 'GET /v1/identity/users/me (user token)',
      url: `${base}/v1/identity/users/me`,
      headers: person,
      check: (body) => (body?.email === ADMIN.email ? undefined : `expected the profile of ${ADMIN.email}`),
      target: targetOf.bearer(kind),
    },
    {
      path: 'users',
      rank: 4,
      title: 'GET /v1/identity/users?page=1&pageSize=20 (service account)',
      url: list(1),
      headers: service,
      check: (body) =>
        Array.isArray(body?.items) && body.items.length === Math.min(20, body.totalCount ?? 0) && body.totalCount >= 1
          ? undefined
          : 'expected a page of min(20, totalCount) users',
      target: targetOf.list(kind),
    },
  ];
  if (scaled) {
    // Page 2,000 the way the API offers deep pages at constant cost: the `nextCursor` of page 1,999
    // (fetched once here by offset). The same page by `page=2000` (an offset of 39,980 rows) is
    // measured beside it for information.
    const previous = await send(list(DEEP_PAGE - 1), { headers: service, timeoutMs: 60_000 });
    const cursor = previous.status === 200 ? JSON.parse(previous.body)?.nextCursor : undefined;
    if (typeof cursor !== 'string')
      throw new Error(
        `page ${DEEP_PAGE - 1} answered ${previous.status} without a nextCursor: ${String(previous.body).slice(0, 300)}`,
      );
    const onDeepPage = (body) =>
      Array.isArray(body?.items) && body.items.length === 20 && body.page === DEEP_PAGE
        ? undefined
        : `expected 20 users on page ${DEEP_PAGE}`;
    reads.push(
      {
        path: 'users-deep',
        rank: 5,
        title: `GET /v1/identity/users?cursor=…&pageSize=20, page ${DEEP_PAGE} (service account)`,
        url: `${base}/v1/identity/users?cursor=${encodeURIComponent(cursor)}&pageSize=20`,
        headers: service,
        check: onDeepPage,
        compareEmpty: `users-${kind}`,
      },
      {
        path: 'users-deep-offset',
        rank: 6,
        title: `GET /v1/identity/users?page=${DEEP_PAGE}&pageSize=20, by offset (service account)`,
        url: list(DEEP_PAGE),
        headers: service,
        check: onDeepPage,
        diagnostic: true,
        compareEmpty: `users-${kind}`,
      },
    );
  }
  const scenarios = [];
  for (const read of reads) {
    const request = { url: read.url, method: 'GET', headers: read.headers };
    scenarios.push(
      httpScenario({
        id: idOf(read.path),
        kind,
        rank: read.rank + (scaled ? 10 : 0),
        scenario: `${read.title} · idt/${labelOf(kind)}${at}`,
        request,
        responseBytes: await probe(read.url, read.headers, read.check),
        ...(read.diagnostic
          ? { diagnostic: true, compare: read.compareEmpty }
          : scaled
            ? targetOf.scaled(read.compareEmpty ?? `${read.path}-${kind}`)
            : read.target),
      }),
    );
  }
  return scenarios;
}

/** An idt server for the bearer reads (and, on SQLite, the diagnostic GET /health) (api group). */
async function startIdtApi(deployment) {
  const running = await startIdt(deployment, `api-${deployment.kind}`);
  const scenarios = await checked(running.server, async () => {
    const list = await readScenarios(deployment, false);
    // Diagnostic, no target: the HTTP pipeline alone (anonymous, not rate limited, no database).
    if (options.diagnostics && deployment.kind === 'sqlite') {
      const request = { url: `${deployment.baseUrl}/health`, method: 'GET' };
      list.push(
        httpScenario({
          id: `health-${deployment.kind}`,
          kind: deployment.kind,
          rank: 9,
          scenario: `GET /health (no auth, no DB) · idt/${labelOf(deployment.kind)}`,
          diagnostic: true,
          compare: 'api-baseline',
          request,
          responseBytes: await probe(request.url),
        }),
      );
    }
    return list;
  });
  return { ...running, scenarios };
}

/**
 * A refresh_token grant scenario over `chains` (bench/load-flow.mjs, one
 * worker per chain): every grant returns the next refresh token (rotation),
 * which the chain's worker uses next, and the chains carry on from round to
 * round.
 */
function refreshChainScenario({ baseUrl, clientId, clientSecret, chains: initial, ...fields }) {
  let chains = initial;
  return {
    script: 'bench/load-flow.mjs',
    concurrencyNote: `${chains.length} refresh-token chains`,
    spec: () => ({ mode: 'refresh', baseUrl, clientId, clientSecret, refreshTokens: chains }),
    after: (result) => {
      if (Array.isArray(result.refreshTokens) && result.refreshTokens.length > 0) chains = result.refreshTokens;
      delete result.refreshTokens;
    },
    ...fields,
  };
}

/**
 * The refresh_token grant on idt: `options.connections` chains, each seeded
 * by the sign-in of its own user (idt keeps 5 active sessions per user and
 * revokes the tokens of evicted ones).
 */
async function refreshScenario(deployment, id, fields) {
  const chains = (await signInUsers(deployment, deployment.chainUsers)).map((answer) => answer.refresh_token);
  return refreshChainScenario({
    id,
    kind: deployment.kind,
    baseUrl: deployment.baseUrl,
    clientId: deployment.app.clientId,
    clientSecret: deployment.app.clientSecret,
    chains,
    ...fields,
  });
}

/** What the stock flows server's application asks for: its login scopes and the API's. */
const STOCK_APP_SCOPE = 'openid offline_access profile email users.read';
const STOCK_APP_REDIRECT_URI = 'https://rp.example.com/callback';

/**
 * A stock oidc-provider baseline of the flows group, configured as idt is
 * for both flows (PKCE, rotation, RS256 id token, ES256 JWT access token;
 * bench/baseline-oidc.mjs, BENCH_REFRESH_CHAINS). One server per flow: the
 * memory adapter keeps its last 1,000 entries, so the sign-ins of one would
 * evict the refresh chains of the other.
 *
 * Without `deployment`, with its memory adapter (information):
 *
 * - `signin`: the full sign-in through oidc-provider's development login
 *   form, which checks no password: what the flow costs without the
 *   argon2id verification, so the report can say how fast a server could
 *   sign in that added only that verification to stock oidc-provider;
 * - `refresh`: the refresh_token grant over `options.connections` chains
 *   minted at start, nothing stored: what oidc-provider itself does on the
 *   same machine.
 *
 * With `deployment`, the same server stores every model through the plain
 * knex adapter of bench/knex-adapter.mjs in a throwaway database of the
 * deployment's engine: what the flow costs stock oidc-provider when it keeps
 * its sessions, grants and tokens, as idt keeps them. These are the idt
 * rows' baselines (issue 46). Its sign-in runs through a login form of its
 * own that looks the bench administrator up by e-mail in the same knex
 * store and verifies the posted password against the administrator's
 * stored argon2id hash of that deployment (idt's parameters, with
 * @node-rs/argon2, at most one verification per core at a time as idt's
 * hasher): stock oidc-provider's sign-in with the password check idt makes.
 */
async function startStockFlow(flow, deployment) {
  const kind = deployment?.kind;
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const clientId = 'bench-app';
  const clientSecret = randomBytes(32).toString('base64url');
  const { id, name } = stockFlow(flow, kind);
  const adapterLabel = kind ? `knex adapter, ${labelOf(kind)}` : 'memory adapter';
  const checksPasswords = flow === 'signin' && kind !== undefined;
  if (checksPasswords && !deployment.adminPasswordHash)
    throw new Error(`${name}: idt/${labelOf(kind)} gave no stored password hash of the administrator to verify`);
  let databaseUrl;
  if (kind) {
    const dir = mkdtempSync(join(os.tmpdir(), 'idt-bench-stock-flows-'));
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    const database = await createBenchDatabase(kind, dir, 'stock');
    cleanups.push(database.drop);
    databaseUrl = database.url;
  }
  const { extra, profileDir } = profiling(`${flow}-stock${kind ? `-${kind}` : ''}`);
  const server = startChild(name, [process.execPath, ...extra, 'bench/baseline-oidc.mjs', String(port)], {
    env: {
      NODE_ENV: 'production',
      BENCH_REFRESH_CHAINS: String(flow === 'refresh' ? options.connections : 1),
      BENCH_APP_ID: clientId,
      BENCH_APP_SECRET: clientSecret,
      BENCH_APP_REDIRECT_URI: STOCK_APP_REDIRECT_URI,
      ...(databaseUrl ? { BENCH_DATABASE_URL: databaseUrl } : {}),
      ...(checksPasswords ? { BENCH_USER_EMAIL: ADMIN.email, BENCH_USER_PASSWORD_HASH: deployment.adminPasswordHash } : {}),
    },
    core: SERVER_CORE,
  });
  const app = { clientId, clientSecret, redirectUri: STOCK_APP_REDIRECT_URI, scope: STOCK_APP_SCOPE };
  // The development login form takes any name and no password; the stored sign-in's form wants the
  // administrator's e-mail and password, as idt's.
  const stockUser = checksPasswords
    ? { email: ADMIN.email, password: ADMIN.password }
    : { email: 'stock-user', password: 'not checked' };
  // Checked like idt's flows, the one this server measures: a sign-in ends in an access and a refresh
  // token (and a wrong password is refused where passwords are checked), a grant in a new refresh token.
  const chains = await checked(server, async () => {
    await server.waitForLine(/^listening/, 30_000);
    const minted = JSON.parse((await server.waitForLine(/^refresh-tokens /, 1000)).slice('refresh-tokens '.length));
    if (flow === 'refresh') {
      minted[0] = (await refresh({ baseUrl, clientId, clientSecret, refreshToken: minted[0] })).refresh_token;
      return minted;
    }
    if (checksPasswords) {
      log(`${name}: ${(await server.waitForLine(/^login-form /, 1000)).slice('login-form '.length)}`);
      const refused = await signIn({ baseUrl, ...app, email: ADMIN.email, password: `${ADMIN.password}!` }).then(
        () => undefined,
        (error) => error,
      );
      if (refused?.status !== 401)
        throw new Error(
          `stock oidc-provider: a wrong password was not refused with 401 (${refused ? `${refused.status}: ${refused.message}` : 'signed in'})`,
        );
    }
    const answer = await signIn({ baseUrl, ...app, ...stockUser });
    if (!answer.access_token || !answer.refresh_token)
      throw new Error(`stock oidc-provider: the sign-in returned no access or refresh token: ${Object.keys(answer)}`);
    return minted;
  });
  const scenario =
    flow === 'signin'
      ? {
          id,
          ...(kind ? { kind } : {}),
          rank: 1,
          scenario: `full sign-in, ${SIGN_IN_CONCURRENCY} at a time · stock oidc-provider (${adapterLabel}, ${checksPasswords ? 'login form verifying argon2id' : 'development login form: no password check'})`,
          baseline: true,
          script: 'bench/load-flow.mjs',
          concurrencyNote: `${SIGN_IN_CONCURRENCY} sign-ins in flight`,
          spec: () => ({ mode: 'signin', baseUrl, ...app, ...stockUser, concurrency: SIGN_IN_CONCURRENCY }),
        }
      : refreshChainScenario({
          id,
          ...(kind ? { kind } : {}),
          rank: 2,
          scenario: `refresh_token grant (rotation), ${options.connections} chains · stock oidc-provider (${adapterLabel})`,
          baseline: true,
          baseUrl,
          clientId,
          clientSecret,
          chains,
        });
  return { server, profileDir, scenarios: [scenario] };
}

/**
 * The row id and server name of a stock oidc-provider flow baseline (`kind`: over the knex adapter on that
 * engine, where the sign-in's login form verifies argon2id).
 */
function stockFlow(flow, kind) {
  if (flow === 'signin')
    return kind
      ? { id: `signin-stock-argon2id-${kind}`, name: `stock oidc-provider (signin, knex, ${labelOf(kind)}, argon2id)` }
      : { id: 'signin-stock', name: 'stock oidc-provider (signin)' };
  return {
    id: `refresh-baseline${kind ? `-${kind}` : ''}`,
    name: `stock oidc-provider (refresh${kind ? `, knex, ${labelOf(kind)}` : ''})`,
  };
}

/** An idt server for the full sign-in and the refresh_token grant (flows group). */
async function startIdtFlows(deployment) {
  const running = await startIdt(deployment, `flows-${deployment.kind}`);
  const label = labelOf(deployment.kind);
  const scenarios = await checked(running.server, async () => [
    {
      id: `signin-${deployment.kind}`,
      kind: deployment.kind,
      rank: 1,
      scenario: `full sign-in (authorize → form → code + PKCE), ${SIGN_IN_CONCURRENCY} at a time · idt/${label}`,
      script: 'bench/load-flow.mjs',
      concurrencyNote: `${SIGN_IN_CONCURRENCY} sign-ins in flight`,
      spec: () => ({
        mode: 'signin',
        baseUrl: deployment.baseUrl,
        ...deployment.app,
        email: ADMIN.email,
        password: ADMIN.password,
        concurrency: SIGN_IN_CONCURRENCY,
      }),
      ...targetOf.signIn(deployment.kind),
    },
    ...(deployment.totpUsers?.length
      ? [
          {
            id: `signin-totp-${deployment.kind}`,
            kind: deployment.kind,
            rank: 1.5,
            scenario: `full sign-in with a TOTP second step (authorize → password → code from the app → code + PKCE), ${SIGN_IN_CONCURRENCY} at a time · idt/${label}`,
            script: 'bench/load-flow.mjs',
            concurrencyNote: `${SIGN_IN_CONCURRENCY} sign-ins in flight, ${deployment.totpUsers.length} users with TOTP`,
            spec: () => ({
              mode: 'signin',
              baseUrl: deployment.baseUrl,
              ...deployment.app,
              password: ADMIN.password,
              totpUsers: deployment.totpUsers,
              concurrency: SIGN_IN_CONCURRENCY,
            }),
            ...targetOf.totpSignIn(deployment.kind),
          },
        ]
      : []),
    ...(deployment.sso?.connectionId && ssoUpstream?.server?.running ? [ssoScenario(deployment, ssoUpstream)] : []),
    await refreshScenario(deployment, `refresh-${deployment.kind}`, {
      rank: 2,
      scenario: `refresh_token grant (rotation), ${options.connections} chains · idt/${label}`,
      ...targetOf.refresh(deployment.kind),
    }),
  ]);
  return { ...running, scenarios };
}

/** The title of the single sign-on row (`--scenario sso` selects it). */
const ssoTitle = (label) =>
  `SSO sign-in through an upstream idt (authorize → address → upstream sign-in → callback → code + PKCE), ${SIGN_IN_CONCURRENCY} at a time · idt/${label}`;

/**
 * The single sign-on row: each sign-in a user of the upstream's pool, through
 * the downstream's identifier-first page, the upstream's own sign-in and the
 * downstream's callback (bench/load-flow.mjs with `ssoUsers`). The
 * organization's connection is enabled over the API (the administrator's
 * token; a platform administrator manages any organization's connections)
 * right before the warm-up and disabled right after the run: while any
 * organization connection is enabled, every sign-in page asks the address
 * first, and the other rows measure the password sign-in as it is without
 * single sign-on.
 */
function ssoScenario(deployment, upstream) {
  const toggle = async (enabled) => {
    deployment.adminToken ??= (await signInUsers(deployment, [ADMIN.email]))[0].access_token;
    const path = `/v1/identity/organizations/${deployment.sso.organizationId}/sso/connections/${deployment.sso.connectionId}/${enabled ? 'enable' : 'disable'}`;
    const answer = await send(`${deployment.baseUrl}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${deployment.adminToken}` },
      timeoutMs: 15_000,
    });
    if (answer.status !== 200) throw new Error(`POST ${path} answered ${answer.status}: ${answer.body.slice(0, 500)}`);
  };
  return {
    id: `signin-sso-${deployment.kind}`,
    kind: deployment.kind,
    rank: 1.7,
    scenario: ssoTitle(labelOf(deployment.kind)),
    script: 'bench/load-flow.mjs',
    concurrencyNote: `${SIGN_IN_CONCURRENCY} sign-ins in flight, ${upstream.users.length} users at the upstream`,
    before: () => toggle(true),
    teardown: () => toggle(false),
    spec: () => ({
      mode: 'signin',
      baseUrl: deployment.baseUrl,
      ...deployment.sso.app,
      password: ADMIN.password,
      ssoUsers: upstream.users,
      upstreamOrigin: upstream.baseUrl,
      ...(upstream.server?.pid ? { upstreamPid: upstream.server.pid } : {}),
      concurrency: SIGN_IN_CONCURRENCY,
    }),
    ...targetOf.ssoSignIn(deployment.kind),
  };
}

/** An idt server over the scaled database: the same paths again, each against its empty-database row (scale group). */
async function startIdtScaled(deployment) {
  const running = await startIdt(deployment, `scale-${deployment.kind}`);
  const kind = deployment.kind;
  const label = labelOf(kind);
  const scenarios = await checked(running.server, async () => {
    await checkToken(deployment.tokenRequest);
    await checkSpreadClients(deployment);
    return [
      httpScenario({
        id: `scale-tokens-${kind}`,
        kind,
        rank: 1,
        scenario: `client credentials · idt/${label} at scale`,
        request: deployment.tokenRequest,
        ...targetOf.scaled(`tokens-${kind}`),
      }),
      httpScenario({
        id: `scale-spread-${kind}`,
        kind,
        rank: 2,
        scenario: `client credentials over ${options.spreadClients.toLocaleString('en-US')} clients · idt/${label} at scale`,
        request: spreadRequest(deployment),
        ...targetOf.scaled(`spread-${kind}`),
        before: () => primeSpread(`idt/${label} spread at scale`, deployment.baseUrl),
      }),
      ...(await readScenarios(deployment, true)),
      await refreshScenario(deployment, `scale-refresh-${kind}`, {
        rank: 20,
        scenario: `refresh_token grant (rotation), ${options.connections} chains · idt/${label} at scale`,
        ...targetOf.scaled(`refresh-${kind}`),
      }),
    ];
  });
  return { ...running, scenarios };
}

/** The administrator's access token on a deployment (signed in once, through the authorization-code flow). */
async function adminToken(deployment) {
  deployment.adminToken ??= (await signInUsers(deployment, [ADMIN.email]))[0].access_token;
  return deployment.adminToken;
}

/**
 * The SCIM rows (scim-audit group): on the seeded organization of SCIM_AUDIT.members members, the users
 * list through the organization's own service account (`GET /v1/identity/users`, the same organization,
 * page 1 of 20) and the SCIM Users list through a SCIM token of that organization, created over the API by
 * the administrator (a platform administrator may) (`GET /scim/v2/Users`, startIndex 1, count 20): the same
 * 20 members (checked), in the same order. Also a SCIM filter on one userName, for information.
 */
async function startIdtScim(deployment) {
  const kind = deployment.kind;
  const label = labelOf(kind);
  const seeded = deployment.scimAudit;
  const running = await startIdt(deployment, `scim-${kind}`);
  const scenarios = await checked(running.server, async () => {
    const base = deployment.baseUrl;
    const serviceToken = await checkToken(tokenRequest(base, seeded.clientId, seeded.clientSecret));
    if (!deployment.scimToken) {
      const path = `/v1/identity/organizations/${seeded.organizationId}/scim/tokens`;
      const answer = await send(`${base}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${await adminToken(deployment)}`, 'content-type': 'application/json' },
        body: JSON.stringify({ name: 'Bench directory' }),
        timeoutMs: 15_000,
      });
      const token = answer.status === 201 ? JSON.parse(answer.body)?.token : undefined;
      if (typeof token !== 'string') throw new Error(`POST ${path} answered ${answer.status}: ${answer.body.slice(0, 500)}`);
      deployment.scimToken = token;
    }
    const service = { authorization: `Bearer ${serviceToken}` };
    const scim = { authorization: `Bearer ${deployment.scimToken}` };
    const members = SCIM_AUDIT.members;
    const size = `${members.toLocaleString('en-US')} members`;
    const usersUrl = `${base}/v1/identity/users?page=1&pageSize=20`;
    const scimUrl = `${base}/scim/v2/Users?startIndex=1&count=20`;
    const filterUrl = `${base}/scim/v2/Users?filter=${encodeURIComponent(`userName eq "${seeded.sampleUserName}"`)}`;
    // The same rows on both sides: the 20 oldest members, in the same order.
    const [users, resources] = await Promise.all([
      send(usersUrl, { headers: service, timeoutMs: 15_000 }).then((answer) => JSON.parse(answer.body)?.items),
      send(scimUrl, { headers: scim, timeoutMs: 15_000 }).then((answer) => JSON.parse(answer.body)?.Resources),
    ]);
    const ids = (list) => (Array.isArray(list) ? list.map((item) => item.id).join(',') : 'none');
    if (ids(users) !== ids(resources))
      throw new Error(
        `the users list and the SCIM list do not show the same 20 members: ${ids(users)} against ${ids(resources)}`,
      );
    const reads = [
      {
        path: 'scim-users-list',
        rank: 0,
        title: `GET /v1/identity/users?page=1&pageSize=20, ${size} (the organization's service account)`,
        url: usersUrl,
        headers: service,
        check: (body) =>
          Array.isArray(body?.items) && body.items.length === 20 && body.totalCount === members
            ? undefined
            : `expected 20 of ${members} users`,
        fields: { baseline: true },
      },
      {
        path: 'scim-users',
        rank: 1,
        title: `GET /scim/v2/Users?startIndex=1&count=20, ${size} (SCIM token)`,
        url: scimUrl,
        headers: scim,
        check: (body) =>
          Array.isArray(body?.Resources) && body.Resources.length === 20 && body.totalResults === members
            ? undefined
            : `expected 20 of ${members} SCIM Users`,
        fields: targetOf.scim(kind),
      },
      {
        path: 'scim-users-filter',
        rank: 2,
        title: `GET /scim/v2/Users?filter=userName eq "…", ${size} (SCIM token)`,
        url: filterUrl,
        headers: scim,
        check: (body) =>
          body?.totalResults === 1 && body.Resources?.[0]?.userName?.toLowerCase() === seeded.sampleUserName.toLowerCase()
            ? undefined
            : `expected the one User ${seeded.sampleUserName}`,
        fields: { diagnostic: true, compare: `scim-users-list-${kind}` },
      },
    ];
    const list = [];
    for (const read of reads) {
      const request = { url: read.url, method: 'GET', headers: read.headers };
      list.push(
        httpScenario({
          id: `${read.path}-${kind}`,
          kind,
          rank: read.rank,
          scenario: `${read.title} · idt/${label}`,
          request,
          responseBytes: await probe(read.url, read.headers, read.check),
          ...read.fields,
        }),
      );
    }
    return list;
  });
  return { ...running, scenarios, notIdle: true };
}

/**
 * The audit rows (scim-audit group), on a server of their own (so that no other load ran on it before):
 * the whole export of the seeded organization's SCIM_AUDIT.auditRecords records, NDJSON and CSV, read by
 * bench/audit-export.mjs while it samples the server's RSS, and the chain's verification, for information.
 * The administrator reads the organization's trail as a platform administrator (`organizationId=`).
 */
async function startIdtAudit(deployment) {
  const kind = deployment.kind;
  const label = labelOf(kind);
  const seeded = deployment.scimAudit;
  const running = await startIdt(deployment, `audit-${kind}`);
  const scenarios = await checked(running.server, async () => {
    const headers = { authorization: `Bearer ${await adminToken(deployment)}` };
    const query = `organizationId=${seeded.organizationId}`;
    const verifyUrl = `${deployment.baseUrl}/v1/audit/verify?${query}`;
    // The seeded records, and what the API recorded since (the SCIM rows' token: identity.scim.tokenCreated).
    let records = 0;
    await probe(verifyUrl, headers, (body) => {
      records = body?.checked;
      return body?.valid === true && records >= SCIM_AUDIT.auditRecords
        ? undefined
        : `expected a valid chain of at least ${SCIM_AUDIT.auditRecords} records`;
    });
    const exportScenario = (format, rank) => ({
      id: `audit-export-${format}-${kind}`,
      kind,
      rank,
      scenario: `GET /v1/audit/events/export?format=${format}, ${records.toLocaleString('en-US')} records streamed (per s: records) · idt/${label}`,
      script: 'bench/audit-export.mjs',
      concurrencyNote: 'one whole export at a time, the server RSS read every 50 ms',
      spec: () => ({
        mode: 'export',
        format,
        records,
        url: `${deployment.baseUrl}/v1/audit/events/export?format=${format}&${query}`,
        headers,
      }),
      ...targetOf.auditExport(),
    });
    return [
      exportScenario('ndjson', 3),
      exportScenario('csv', 4),
      {
        id: `audit-verify-${kind}`,
        kind,
        rank: 5,
        scenario: `GET /v1/audit/verify, ${records.toLocaleString('en-US')} records (per s: records checked) · idt/${label}`,
        script: 'bench/audit-export.mjs',
        concurrencyNote: 'one verification at a time',
        spec: () => ({ mode: 'verify', records, url: verifyUrl, headers }),
        diagnostic: true,
      },
    ];
  });
  return { ...running, scenarios, notIdle: true };
}

/** The sample with the median requests/s (the lower one of an even count). */
function median(samples) {
  const sorted = [...samples].sort((a, b) => a.requestsPerSecond - b.requestsPerSecond);
  return sorted[Math.floor((sorted.length - 1) / 2)];
}

/** The fields of a scenario that go into its row. */
function rowFields(scenario, group) {
  const { id, kind, rank, baseline, diagnostic, compare, ratio, p99, scaled, rssBelowMiB, responseBytes } = scenario;
  return {
    id,
    group,
    scenario: scenario.scenario,
    ...(kind ? { kind } : {}),
    rank: rank ?? 0,
    ...(baseline ? { baseline } : {}),
    ...(diagnostic ? { diagnostic } : {}),
    ...(compare ? { compare } : {}),
    ...(ratio !== undefined
      ? {
          target: {
            ratio,
            ...(p99 ? { p99AtMostBaseline: true } : {}),
            ...(scaled ? { ofEmpty: true } : {}),
          },
        }
      : rssBelowMiB !== undefined
        ? { target: { peakRssBelowMiB: rssBelowMiB } }
        : {}),
    ...(responseBytes !== undefined ? { responseBytes } : {}),
  };
}

/** Whether `--scenario` leaves an idt scenario in (baselines are always measured). */
function selected(scenario) {
  return (
    options.scenario === undefined ||
    // An idt row that others compare with (the scim-audit group's users list) runs whatever --scenario says.
    scenario.baseline === true ||
    scenario.scenario.toLowerCase().includes(options.scenario.toLowerCase())
  );
}

/**
 * Runs one group of scenarios: starts every server of the group (all pinned
 * to the server core; idle ones cost nothing), notes each idt server's idle
 * RSS, then measures the scenarios in turn, baseline first, `--repeat`
 * rounds, so that baseline and idt see the same machine; each scenario
 * reports its median round.
 */
async function runGroup(group, entries) {
  const running = [];
  for (const entry of entries) {
    try {
      running.push(await entry.start());
    } catch (error) {
      log(`${entry.name}: ${error.message}`);
      for (const id of entry.ids) record({ id, group, scenario: entry.name, ...entry.flags, error: error.message });
    }
  }
  // Idle: started, checked (tokens fetched, signed in), no load yet; sampled 1 s after the checks and
  // once V8 has given back the garbage of starting (its memory reducer runs some seconds into idleness).
  // The scim-audit servers' checks read whole lists and the whole chain: not what "RSS idle" measures.
  const idleServers = running.filter(({ server, deployment, notIdle }) => server && deployment && !notIdle);
  if (idleServers.length) {
    await sleep(1000);
    const early = idleServers.map(({ server }) => memoryOf(server.pid));
    const settled = await settledMemory(idleServers.map(({ server }) => server.pid));
    idleServers.forEach(({ deployment }, index) => {
      deployment.idleRss.push({ group, ...settled[index], earlyRssMiB: early[index].rssMiB });
    });
  }
  const samples = new Map();
  const failures = new Map();
  try {
    for (let round = 1; round <= options.repeat; round++) {
      for (const { server, deployment, scenarios } of running) {
        for (const scenario of scenarios) {
          if (failures.has(scenario.id)) continue;
          if (deployment && !selected(scenario)) continue;
          const name = options.repeat > 1 ? `${scenario.scenario} [${round}/${options.repeat}]` : scenario.scenario;
          try {
            if (server && !server.running) throw new Error(`${server.name} is not running\n${tail(server.lines, 10)}`);
            const result = await measure(name, scenario, server?.pid);
            if (server) result.memory = memoryOf(server.pid);
            if (deployment) deployment.loadRss.push({ id: scenario.id, ...result.memory });
            samples.set(scenario.id, [...(samples.get(scenario.id) ?? []), result]);
            log(`${name}: ${Math.round(result.requestsPerSecond)}/s, ${result.failed} failed`);
            if (result.failed > 0) log(`${name}: failures ${JSON.stringify(result.failures ?? result.statusCodes)}`);
          } catch (error) {
            failures.set(scenario.id, error.message);
            log(`${name}: ${error.message}`);
          }
        }
      }
    }
  } finally {
    for (const { server, profileDir, scenarios } of running) if (server) await stopServer(server, profileDir, scenarios[0].id);
  }
  for (const { deployment, scenarios } of running) {
    for (const scenario of scenarios) {
      if (deployment && !selected(scenario)) continue;
      const rounds = samples.get(scenario.id);
      if (failures.has(scenario.id) || !rounds?.length) {
        record({ ...rowFields(scenario, group), error: failures.get(scenario.id) ?? 'not measured' });
        continue;
      }
      const result = median(rounds);
      record({
        ...rowFields(scenario, group),
        result,
        memory: result.memory,
        ...(rounds.length > 1
          ? {
              rounds: rounds.map((round) => Math.round(round.requestsPerSecond)),
              // Each round's RSS right after its measured run (the RSS-under-token-load row's rounds).
              ...(rounds.every((round) => Number.isFinite(round.memory?.rssMiB))
                ? { roundsRssMiB: rounds.map((round) => Number(round.memory.rssMiB.toFixed(1))) }
                : {}),
            }
          : {}),
      });
    }
  }
}

function record(row) {
  results.push(row);
}

// ---------------------------------------------------------------- report

/** Whether every request of a measured row succeeded (any non-2xx answer or error fails the row, so does no answer at all). */
const clean = (result) => result.failed === 0 && result.ok > 0;

function evaluate(rows) {
  const byId = new Map(rows.map((row) => [row.id, row]));
  return rows.map((row) => {
    if (!row.result) return { ...row, pass: false };
    const notes = [];
    if (!clean(row.result)) {
      const codes = Object.entries(row.result.statusCodes ?? {})
        .filter(([code]) => !code.startsWith('2'))
        .map(([code, value]) => `${code}: ${typeof value === 'object' ? value.count : value}`)
        .join(', ');
      const first = row.result.failures?.[0];
      notes.push(
        `${row.result.failed} failed requests (${(row.result.failedRatio * 100).toFixed(2)}%${codes ? `; ${codes}` : ''}${row.result.errors ? `; ${row.result.errors} errors or timeouts` : ''})${
          first
            ? `, e.g. ${first.status}${first.message ? ` ${first.message}` : ''}${first.body ? `: ${first.body.replace(/\s+/g, ' ').slice(0, 300)}` : ''}`
            : ''
        }`,
      );
    }
    if (row.baseline) return { ...row, pass: clean(row.result), ...(notes.length ? { note: notes.join('; ') } : {}) };
    const base = row.compare ? byId.get(row.compare) : undefined;
    const evaluated = { ...row };
    let pass = clean(row.result);
    if (base?.result) {
      evaluated.baselineScenario = base.scenario;
      evaluated.baselineRequestsPerSecond = base.result.requestsPerSecond;
      evaluated.ratio = row.result.requestsPerSecond / base.result.requestsPerSecond;
      // Each round over the baseline measured just before it in the same round: the machine's
      // drift between rounds cancels out. Reported beside the ratio of medians, which decides.
      if (row.rounds && base.rounds?.length === row.rounds.length && !row.target?.ofEmpty) {
        evaluated.roundRatios = row.rounds.map((value, index) => value / base.rounds[index]);
        evaluated.medianRoundRatio = [...evaluated.roundRatios].sort((a, b) => a - b)[
          Math.floor((evaluated.roundRatios.length - 1) / 2)
        ];
      }
    }
    const target = row.target;
    if (target?.ratio !== undefined) {
      if (evaluated.ratio === undefined) {
        pass = false;
        notes.push(`no ${row.compare} row in this run to compare with${row.target.ofEmpty ? ' (run its group too)' : ''}`);
      } else if (evaluated.ratio < target.ratio) pass = false;
    }
    if (target?.p99AtMostBaseline && base?.result && row.result.latency.p99 > base.result.latency.p99) {
      pass = false;
      notes.push(`p99 ${row.result.latency.p99} ms over the baseline's ${base.result.latency.p99} ms`);
    }
    // The audit rows: the whole export's time and rate, and the server's peak RSS while it streamed.
    const audit = row.result.audit;
    if (audit?.mode === 'export') {
      evaluated.peakRssMiB = audit.peakRssMiB;
      if (target?.peakRssBelowMiB !== undefined && !(audit.peakRssMiB < target.peakRssBelowMiB)) {
        pass = false;
        notes.push(`peak RSS ${audit.peakRssMiB.toFixed(0)} MiB, over ${target.peakRssBelowMiB} MiB`);
      }
      const seconds = (row.result.latency.p50 / 1000).toFixed(2);
      notes.push(
        `${count(audit.records)} records (${((audit.bytes ?? 0) / 2 ** 20).toFixed(1)} MiB of ${audit.format.toUpperCase()}) in ${seconds} s, the median of ${audit.runs} whole exports (${audit.exportMs.join(', ')} ms): ${count(row.result.requestsPerSecond)} records/s; server peak RSS ${audit.peakRssMiB.toFixed(0)} MiB while streaming (VmRSS every ${audit.sampleEveryMs} ms${audit.hwmReset ? ', and VmHWM reset before each export and read after' : ''}; ${audit.rssBeforeMiB.join(', ')} MiB before each; peaks ${audit.sampledPeakRssMiB.join(', ')} MiB sampled${audit.hwmReset ? `, VmHWM ${audit.hwmMiB.join(', ')}` : ''})`,
      );
    } else if (audit?.mode === 'verify') {
      notes.push(
        `${count(audit.records)} records checked in ${(row.result.latency.p50 / 1000).toFixed(2)} s, the median of ${audit.runs} verifications (${audit.exportMs.join(', ')} ms)`,
      );
    }
    // The idt sign-in beside argon2id alone (4 in flight, and one at a time as idt's hasher verifies on one
    // core), and the ceiling on one core of a server that added nothing but the argon2id verification, one
    // at a time, to stock oidc-provider's flow on its memory adapter (their costs per sign-in, in
    // core-seconds, add up).
    if (row.kind && row.id === `signin-${row.kind}`) {
      const perSecond = row.result.requestsPerSecond;
      const argon2 = byId.get('signin-baseline')?.result?.requestsPerSecond;
      const serial = byId.get('signin-baseline-serial')?.result?.requestsPerSecond;
      const stockFlowAlone = byId.get(stockFlow('signin').id)?.result?.requestsPerSecond;
      if (argon2 > 0)
        notes.push(
          `argon2id alone, ${SIGN_IN_CONCURRENCY} in flight on one core, did ${count(argon2)}/s: ${(perSecond / argon2).toFixed(2)}× that`,
        );
      if (serial > 0)
        notes.push(
          `one at a time, as idt's hasher runs it on one core, ${count(serial)}/s: ${(perSecond / serial).toFixed(2)}× that`,
        );
      if (stockFlowAlone > 0 && serial > 0) {
        const ceiling = 1 / (1 / serial + 1 / stockFlowAlone);
        notes.push(
          `stock oidc-provider's flow on its memory adapter with no password check ran ${count(stockFlowAlone)}/s: with only argon2id added, one at a time, one core would allow at most ${count(ceiling)}/s (this row ${(perSecond / ceiling).toFixed(2)}× that)`,
        );
      }
    }
    // The single sign-on row: who did what work, and how many sign-ins were first ones.
    if (row.kind && row.id === `signin-sso-${row.kind}`) {
      const { cpu, ssoUsers, ssoFirstSignInsMeasured: first, requestsPerFlow } = row.result;
      const local = byId.get(`signin-${row.kind}`)?.result;
      if (requestsPerFlow)
        notes.push(
          `${requestsPerFlow} HTTP requests per sign-in over both servers${local?.requestsPerFlow ? ` (the password sign-in: ${local.requestsPerFlow})` : ''}`,
        );
      // CPU per sign-in varies less than the rate on a shared machine: each side's, beside the password sign-in's.
      const msPerFlow = (result, cores) =>
        cores !== undefined && result.requestsPerSecond > 0
          ? `${((cores * 1000) / result.requestsPerSecond).toFixed(1)} ms`
          : undefined;
      const downstreamMs = msPerFlow(row.result, cpu?.server);
      const upstreamMs = msPerFlow(row.result, cpu?.upstream);
      const localMs = local ? msPerFlow(local, local.cpu?.server) : undefined;
      if (downstreamMs)
        notes.push(
          `CPU per sign-in: ${downstreamMs} here${upstreamMs ? ` and ${upstreamMs} at the upstream` : ''}${localMs ? ` (the password sign-in: ${localMs})` : ''}`,
        );
      notes.push(
        `the upstream is idt on SQLite in its own process (${UPSTREAM_CORE ? `core ${UPSTREAM_CORE}` : 'unpinned'}) and verifies every password (argon2id); the downstream verifies none${
          cpu?.upstream !== undefined
            ? `; the upstream used ${cpu.upstream.toFixed(2)} cores, counted neither in "server CPU" (the downstream's) nor in "other CPU"`
            : ''
        }`,
      );
      if (ssoUsers)
        notes.push(
          `${ssoUsers} upstream users in turn: the first sign-in of each provisions it just in time here, ${
            first === 0
              ? 'all of them in the warm-up: every measured sign-in is a returning user'
              : `${first} of them in the measured run, the rest returning users`
          }`,
        );
      notes.push(
        'the organization connection is enabled for this row only (while one is, every sign-in page asks the address first)',
      );
    }
    // The idt refresh grant beside stock oidc-provider's on its memory adapter, which stores nothing: the
    // fastest an oidc-provider server does the grant on the machine.
    if (row.kind && row.id === `refresh-${row.kind}`) {
      const memory = byId.get(stockFlow('refresh').id)?.result?.requestsPerSecond;
      if (memory > 0)
        notes.push(
          `stock oidc-provider on its memory adapter, storing nothing, ran ${count(memory)}/s: ${(row.result.requestsPerSecond / memory).toFixed(2)}× that`,
        );
    }
    return {
      ...evaluated,
      pass: row.diagnostic ? (clean(row.result) ? undefined : false) : pass,
      ...(notes.length ? { note: notes.join('; ') } : {}),
    };
  });
}

const GROUP_ORDER = Object.fromEntries(GROUPS.map((group, index) => [group, index]));
const KIND_ORDER = { sqlite: 1, postgres: 2 };

/** Rows in table order: by group, then path (baseline first), then database. */
function ordered(rows) {
  const key = (row) => [GROUP_ORDER[row.group] ?? 99, row.rank ?? 0, KIND_ORDER[row.kind] ?? 0];
  return [...rows].sort((a, b) => {
    const [x, y] = [key(a), key(b)];
    return x[0] - y[0] || x[1] - y[1] || x[2] - y[2];
  });
}

function targetText(row) {
  const target = row.target;
  if (!target) return '';
  const parts = [];
  if (target.ratio !== undefined) parts.push(`≥ ${target.ratio}×${target.ofEmpty ? ' empty' : ''}`);
  if (target.p99AtMostBaseline) parts.push('p99 ≤ base');
  if (target.peakRssBelowMiB !== undefined) parts.push(`peak RSS < ${target.peakRssBelowMiB} MiB`);
  return parts.join(', ');
}

function renderTable(header, body, numeric) {
  const widths = header.map((title, i) => Math.max(title.length, ...body.map((cells) => String(cells[i]).length)));
  const line = (cells) =>
    `| ${cells.map((cell, i) => (numeric.has(i) ? String(cell).padStart(widths[i]) : String(cell).padEnd(widths[i]))).join(' | ')} |`;
  return [line(header), `|${widths.map((w, i) => (numeric.has(i) ? `${'-'.repeat(w + 1)}:` : '-'.repeat(w + 2))).join('|')}|`]
    .concat(body.map(line))
    .join('\n');
}

const count = (value) => Math.round(value).toLocaleString('en-US');

function table(rows) {
  const header = [
    'scenario',
    'per s',
    'p50',
    'p99',
    'failed',
    'server CPU',
    'other CPU',
    'per CPU-s',
    'RSS MiB',
    'baseline',
    'ratio',
    'target',
    'pass',
  ];
  const body = ordered(rows).map((row) => {
    const r = row.result;
    const target = targetText(row);
    if (!r) return [row.scenario, '—', '—', '—', '—', '—', '—', '—', '—', '—', '—', target, 'ERROR'];
    const pass = row.baseline
      ? row.pass
        ? ''
        : 'ERRORS'
      : row.diagnostic
        ? row.pass === false
          ? 'ERRORS'
          : 'info'
        : !clean(r)
          ? 'ERRORS'
          : row.pass
            ? 'yes'
            : row.target?.ratio !== undefined && row.ratio === undefined
              ? 'NO BASELINE'
              : 'NO';
    return [
      row.scenario,
      count(r.requestsPerSecond),
      `${r.latency.p50} ms`,
      `${r.latency.p99} ms`,
      r.failed === 0 ? '0' : `${r.failed} (${(r.failedRatio * 100).toFixed(1)}%)`,
      r.cpu ? r.cpu.server.toFixed(2) : '—',
      r.cpu ? r.cpu.other.toFixed(2) : '—',
      r.cpu && r.cpu.server > 0 ? count(r.requestsPerSecond / r.cpu.server) : '—',
      Number.isFinite(row.memory?.rssMiB) ? row.memory.rssMiB.toFixed(0) : '—',
      row.baseline ? '(baseline)' : row.ratio === undefined ? '—' : count(row.baselineRequestsPerSecond),
      row.baseline || row.ratio === undefined ? '' : `${row.ratio.toFixed(2)}×`,
      target,
      pass,
    ];
  });
  return renderTable(header, body, new Set([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]));
}

/** The median of numbers (the lower one of an even count). */
function medianOf(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)];
}

/** A row's RSS right after its measured run in each round (one reading without --repeat). */
function rssRounds(row) {
  if (row.roundsRssMiB?.length) return row.roundsRssMiB;
  return Number.isFinite(row.memory?.rssMiB) ? [row.memory.rssMiB] : [];
}

/**
 * The server-process figures of each database: cold start (spawn to the
 * first 200 on /health, median of every idt server started), RSS idle
 * (largest over the servers, after start and checks, before any load), RSS
 * under token load with the spread clients at scale (the scale server's RSS
 * right after its token run over them, over the stock knex spread server's
 * right after its run in the same run: issue 46's row), and, for
 * information, RSS under load (largest right after a measured run).
 */
function serverMetrics(deployments, rows) {
  const byId = new Map(rows.map((row) => [row.id, row]));
  const metrics = [];
  for (const deployment of deployments) {
    const label = labelOf(deployment.kind);
    const starts = [...deployment.coldStarts].sort((a, b) => a - b);
    if (starts.length) {
      const value = starts[Math.floor((starts.length - 1) / 2)];
      metrics.push({
        id: `coldstart-${deployment.kind}`,
        metric: `cold start: spawn → first 200 on /health · idt/${label}`,
        value,
        unit: 'ms',
        detail: `median of ${starts.length} starts (${starts.map((ms) => Math.round(ms)).join(', ')} ms)${
          bareColdStarts.length ? `; bare node:http ${bareColdStarts.map((ms) => Math.round(ms)).join(', ')} ms` : ''
        }`,
        target: { below: TARGETS.coldStartMs },
        pass: value < TARGETS.coldStartMs,
      });
    }
    const idle = deployment.idleRss.filter((sample) => Number.isFinite(sample.rssMiB));
    if (idle.length) {
      const largest = idle.reduce((max, sample) => (sample.rssMiB > max.rssMiB ? sample : max));
      metrics.push({
        id: `rss-idle-${deployment.kind}`,
        metric: `RSS idle (started, signed in, no load, settled) · idt/${label}`,
        value: largest.rssMiB,
        unit: 'MiB',
        detail: `largest of ${idle.length} servers (${largest.group}); ${idle.map((sample) => sample.rssMiB.toFixed(0)).join(', ')} MiB once settled (${idle.map((sample) => `${sample.settled ? '' : 'not settled after '}${Math.round(sample.settledAfterS)} s`).join(', ')}); 1 s after the checks: ${idle.map((sample) => sample.earlyRssMiB.toFixed(0)).join(', ')} MiB`,
        target: { below: TARGETS.rssIdleMiB },
        pass: largest.rssMiB < TARGETS.rssIdleMiB,
      });
    }
    const loaded = deployment.loadRss.filter((sample) => Number.isFinite(sample.rssMiB));
    const tokenLoad = tokenLoadRss(deployment, byId, loaded);
    if (tokenLoad) metrics.push(tokenLoad);
    if (loaded.length) {
      const largest = loaded.reduce((max, sample) => (sample.rssMiB > max.rssMiB ? sample : max));
      const peak = Math.max(...loaded.map((sample) => sample.peakRssMiB).filter(Number.isFinite));
      metrics.push({
        id: `rss-load-${deployment.kind}`,
        metric: `RSS under load, largest (right after a measured run) · idt/${label}`,
        value: largest.rssMiB,
        unit: 'MiB',
        detail: `information; largest of ${loaded.length} runs (${largest.id}); peak VmHWM ${Number.isFinite(peak) ? peak.toFixed(0) : '—'} MiB`,
      });
    }
  }
  return metrics;
}

/**
 * RSS under token load with the spread clients at scale (issue 46): the scale
 * server's RSS right after its client-credentials run over the spread
 * clients, over the stock knex spread server's RSS right after its run over
 * the same clients on the same engine, both `VmRSS` read the same way in the
 * same run (the median of their rounds' readings with --repeat, and each
 * round over the same round's). Undefined when the scale row was not
 * measured; NO BASELINE when the spread group did not run.
 */
function tokenLoadRss(deployment, byId, loaded) {
  const kind = deployment.kind;
  const row = byId.get(`scale-spread-${kind}`);
  const readings = row?.result ? rssRounds(row) : [];
  if (!readings.length) return undefined;
  const compare = `spread-baseline-${kind}`;
  const base = byId.get(compare);
  const baseReadings = base?.result ? rssRounds(base) : [];
  const value = medianOf(readings);
  const scaleRuns = loaded.filter((sample) => sample.id.startsWith('scale-'));
  const largest = scaleRuns.length ? scaleRuns.reduce((max, sample) => (sample.rssMiB > max.rssMiB ? sample : max)) : undefined;
  const rounds = (values) => (values.length > 1 ? ` (rounds ${values.map((mib) => mib.toFixed(0)).join(', ')})` : '');
  const metric = {
    id: `rss-token-load-${kind}`,
    metric: `RSS under token load with ${options.spreadClients.toLocaleString('en-US')} clients and ${SCALE.users.toLocaleString('en-US')} users · idt/${labelOf(kind)}`,
    value,
    unit: 'MiB',
    idtScenario: row.scenario,
    compare,
    target: { ratioAtMost: TARGETS.rssTokenLoad, compare },
    ...(largest ? { largestScale: { id: largest.id, rssMiB: largest.rssMiB } } : {}),
  };
  const largestText = largest ? `; the largest of any scale path: ${largest.rssMiB.toFixed(0)} MiB (${largest.id})` : '';
  if (!baseReadings.length) {
    return {
      ...metric,
      pass: false,
      noBaseline: true,
      detail: `after client credentials over the ${options.spreadClients.toLocaleString('en-US')} clients at scale${rounds(readings)}; no ${compare} row in this run to compare with (run the spread group too)${largestText}`,
    };
  }
  const baseValue = medianOf(baseReadings);
  const ratio = value / baseValue;
  const roundRatios =
    readings.length > 1 && baseReadings.length === readings.length
      ? readings.map((mib, index) => mib / baseReadings[index])
      : undefined;
  return {
    ...metric,
    baselineScenario: base.scenario,
    baselineValue: baseValue,
    ratio,
    ...(roundRatios ? { roundRatios, medianRoundRatio: medianOf(roundRatios) } : {}),
    pass: ratio <= TARGETS.rssTokenLoad,
    detail: `after client credentials over the ${options.spreadClients.toLocaleString('en-US')} clients at scale${rounds(readings)}, over stock oidc-provider (knex adapter, ${labelOf(kind)}) after its run over the same clients: ${baseValue.toFixed(0)} MiB${rounds(baseReadings)}${
      roundRatios ? `; each round over the same round's: ${roundRatios.map((value) => value.toFixed(2)).join(' / ')}` : ''
    }${largestText}`,
  };
}

function metricsTable(metrics) {
  const body = metrics.map((metric) => {
    const value = `${metric.unit === 'ms' ? Math.round(metric.value) : metric.value.toFixed(0)} ${metric.unit}`;
    const target = metric.target?.below
      ? `< ${metric.target.below.toLocaleString('en-US')} ${metric.unit}`
      : metric.target?.ratioAtMost
        ? `≤ ${metric.target.ratioAtMost}× stock`
        : '';
    return [
      metric.metric,
      metric.ratio === undefined ? value : `${value}, ${metric.ratio.toFixed(2)}×`,
      target,
      metric.pass === undefined ? 'info' : metric.pass ? 'yes' : metric.noBaseline ? 'NO BASELINE' : 'NO',
      metric.detail,
    ];
  });
  return renderTable(['server process', 'value', 'target', 'pass', 'detail'], body, new Set([1]));
}

// ---------------------------------------------------------------- main

/** The row ids a group has for one database (for ERROR rows when its servers cannot start). */
const IDS = {
  tokens: (kind) => [`tokens-${kind}`],
  api: (kind) => [
    `whoami-service-${kind}`,
    `whoami-user-${kind}`,
    `me-${kind}`,
    `users-${kind}`,
    ...(options.diagnostics && kind === 'sqlite' ? [`health-${kind}`] : []),
  ],
  flows: (kind) => [`signin-${kind}`, `signin-totp-${kind}`, `signin-sso-${kind}`, `refresh-${kind}`],
  spread: (kind) => [`spread-${kind}`],
  'scim-audit': (kind) => [
    `scim-users-list-${kind}`,
    `scim-users-${kind}`,
    `scim-users-filter-${kind}`,
    `audit-export-ndjson-${kind}`,
    `audit-export-csv-${kind}`,
    `audit-verify-${kind}`,
  ],
  scale: (kind) =>
    ['tokens', 'spread', 'whoami-service', 'whoami-user', 'me', 'users', 'users-deep', 'users-deep-offset', 'refresh'].map(
      (path) => `scale-${path}-${kind}`,
    ),
};

function recordErrors(group, kind, message) {
  for (const id of IDS[group](kind))
    record({ id, group, kind, rank: 99, scenario: `${id} · idt/${labelOf(kind)}`, error: message });
}

async function main() {
  const started = new Date();
  const machine = {
    cpu: os.cpus()[0]?.model ?? 'unknown',
    cores: cpuCount,
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    node: process.version,
    platform: `${os.type()} ${os.release()}`,
  };
  const loadStart = loadAverage();
  const groups = options.groups;
  log(`${machine.cores} cores (${machine.cpu}), Node ${machine.node}; ${pinNote}`);
  log(`groups: ${[...groups].join(', ')}; load average at start: ${loadStart.join(', ')}`);
  if (loadStart[0] > 0.5 * cpuCount) log('the machine is busy; figures will be noisy (re-run when it is quieter)');
  if (options.server === 'bundle') {
    log('bundling the reference server from the sources (esbuild)');
    bundlePath = await buildBundle();
  }
  if (options.server === 'dist' && isDistStale())
    log('examples/server/dist is older than the sources; run `npm run build` first');

  const withPostgres = options.only !== 'sqlite' && (await postgresAvailable());
  const kinds = [...(options.only !== 'postgres' ? ['sqlite'] : []), ...(withPostgres ? ['postgres'] : [])];
  const perKind = { tokens: 1, api: 5, flows: 5, spread: 2, scale: 9, 'scim-audit': 6 };
  const baselines = { tokens: 1, api: 1, flows: 4, spread: 0, scale: 0, 'scim-audit': 0 };
  const measurements = [...groups].reduce((sum, group) => sum + baselines[group] + perKind[group] * kinds.length, 0);
  const budgetSeconds =
    measurements * options.repeat * (options.warmup + options.duration + options.quiet + 45) +
    600 +
    (groups.has('scale') ? 600 * kinds.length : 0) +
    (groups.has('scim-audit') ? 300 * kinds.length : 0);
  const watchdog = setTimeout(
    () => void shutdown(1, `the benchmark did not finish within ${budgetSeconds} s; giving up`),
    budgetSeconds * 1000,
  );
  watchdog.unref();

  // The single sign-on row's upstream idt, when the flows group runs and --scenario leaves the row in.
  if (groups.has('flows') && kinds.length > 0 && kinds.some((kind) => selected({ scenario: ssoTitle(labelOf(kind)) }))) {
    try {
      ssoUpstream = await prepareUpstream(kinds);
    } catch (error) {
      ssoUpstreamError = error.message;
      log(`idt upstream: ${error.message}`);
    }
  }

  const deployments = [];
  for (const kind of kinds) {
    try {
      deployments.push(await prepareIdt(kind, ssoUpstream));
    } catch (error) {
      log(`idt/${kind}: ${error.message}`);
      for (const group of groups) recordErrors(group, kind, error.message);
    }
  }
  const idtEntry = (group, deployment, start) => ({
    ids: IDS[group](deployment.kind),
    name: `${group} · idt/${labelOf(deployment.kind)}`,
    flags: { kind: deployment.kind, rank: 99 },
    start: () => start(deployment),
  });

  if (groups.has('tokens'))
    await runGroup('tokens', [
      { ids: ['tokens-baseline'], name: 'stock oidc-provider', flags: { baseline: true }, start: startStockProvider },
      ...deployments.map((deployment) => idtEntry('tokens', deployment, startIdtTokens)),
    ]);
  if (groups.has('api'))
    await runGroup('api', [
      { ids: ['api-baseline'], name: 'bare node:http', flags: { baseline: true }, start: startBareHttp },
      ...deployments.map((deployment) => idtEntry('api', deployment, startIdtApi)),
    ]);
  if (groups.has('flows')) {
    if (ssoUpstream) {
      try {
        await startUpstream(ssoUpstream);
      } catch (error) {
        ssoUpstreamError = error.message;
        log(`idt upstream: ${error.message}`);
      }
    }
    await runGroup('flows', [
      {
        ids: ['signin-baseline', 'signin-baseline-serial'],
        name: 'argon2id verify alone',
        flags: { baseline: true },
        start: () => startArgon2Baseline(deployments),
      },
      // Stock oidc-provider's flows: on its memory adapter (information), then kept through the knex adapter
      // on each engine (the idt rows' baselines).
      ...[undefined, ...deployments].flatMap((deployment) =>
        ['signin', 'refresh'].map((flow) => {
          const { id, name } = stockFlow(flow, deployment?.kind);
          return {
            ids: [id],
            name,
            flags: { baseline: true, ...(deployment ? { kind: deployment.kind } : {}) },
            start: () => startStockFlow(flow, deployment),
          };
        }),
      ),
      ...deployments.map((deployment) => idtEntry('flows', deployment, startIdtFlows)),
    ]);
    if (ssoUpstream?.server) await ssoUpstream.server.stop(15_000);
    // A single sign-on row that could not be set up, or whose upstream did not start, says why.
    for (const deployment of deployments) {
      const reason = deployment.sso?.error ?? ssoUpstreamError;
      if (reason && !results.some((row) => row.id === `signin-sso-${deployment.kind}`))
        record({
          id: `signin-sso-${deployment.kind}`,
          group: 'flows',
          kind: deployment.kind,
          rank: 1.7,
          scenario: ssoTitle(labelOf(deployment.kind)),
          error: reason,
        });
    }
  }
  if (groups.has('spread')) {
    const seeded = [];
    for (const deployment of deployments) {
      try {
        await seedSpreadClients(deployment);
        seeded.push(deployment);
      } catch (error) {
        log(`idt/${deployment.kind}: ${error.message}`);
        recordErrors('spread', deployment.kind, error.message);
      }
    }
    await runGroup(
      'spread',
      seeded.flatMap((deployment) => [
        {
          ids: [`spread-baseline-${deployment.kind}`],
          name: `stock oidc-provider (knex, ${labelOf(deployment.kind)})`,
          flags: { baseline: true, kind: deployment.kind },
          start: () => startStockKnex(deployment.kind),
        },
        idtEntry('spread', deployment, startIdtSpread),
      ]),
    );
  }
  if (groups.has('scale')) {
    const seeded = [];
    for (const deployment of deployments) {
      try {
        await seedScale(deployment);
        seeded.push(deployment);
      } catch (error) {
        log(`idt/${deployment.kind}: ${error.message}`);
        recordErrors('scale', deployment.kind, error.message);
      }
    }
    await runGroup(
      'scale',
      seeded.map((deployment) => idtEntry('scale', deployment, startIdtScaled)),
    );
  }

  if (groups.has('scim-audit')) {
    const seeded = [];
    for (const deployment of deployments) {
      try {
        await seedScimAudit(deployment);
        seeded.push(deployment);
      } catch (error) {
        log(`idt/${deployment.kind}: ${error.message}`);
        recordErrors('scim-audit', deployment.kind, error.message);
      }
    }
    // Two passes: a deployment's servers share its port, and the export rows get a server no other load ran on.
    await runGroup(
      'scim-audit',
      seeded.map((deployment) => ({
        ids: IDS['scim-audit'](deployment.kind).slice(0, 3),
        name: `scim · idt/${labelOf(deployment.kind)}`,
        flags: { kind: deployment.kind, rank: 99 },
        start: () => startIdtScim(deployment),
      })),
    );
    await runGroup(
      'scim-audit',
      seeded.map((deployment) => ({
        ids: IDS['scim-audit'](deployment.kind).slice(3),
        name: `audit · idt/${labelOf(deployment.kind)}`,
        flags: { kind: deployment.kind, rank: 99 },
        start: () => startIdtAudit(deployment),
      })),
    );
  }

  const rows = ordered(evaluate(results));
  const metrics = serverMetrics(deployments, rows);
  const loadEnd = loadAverage();
  const failedRows = rows.filter((row) => !row.result || !clean(row.result));
  const missed = [
    ...rows.filter((row) => row.result && clean(row.result) && !row.baseline && !row.diagnostic && !row.pass),
    ...metrics.filter((metric) => metric.pass === false),
  ];
  const report = {
    startedAt: started.toISOString(),
    finishedAt: new Date().toISOString(),
    machine,
    pinning: pinNote,
    server: options.server,
    serverFlags: options.serverFlags,
    serverEnv: options.serverEnv,
    environment: options.environment,
    groups: [...groups],
    settings: {
      duration: options.duration,
      warmup: options.warmup,
      connections: options.connections,
      signInConcurrency: SIGN_IN_CONCURRENCY,
      refreshChains: options.connections,
      spreadClients: options.spreadClients,
      scale: SCALE,
      repeat: options.repeat,
      quiet: options.quiet,
    },
    loadAverage: { start: loadStart, end: loadEnd },
    targets: TARGETS,
    results: rows,
    serverMetrics: metrics,
    seeding: Object.fromEntries(deployments.map((deployment) => [deployment.kind, deployment.seeding])),
    ...(profiles.length ? { profiles } : {}),
  };

  if (options.json) {
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  } else {
    const out = [];
    out.push('');
    out.push(
      `idt benchmarks, ${started.toISOString()} · ${machine.cores} × ${machine.cpu} · Node ${machine.node} · groups ${[...groups].join(', ')} · ${options.warmup} s warm-up + ${options.duration} s${options.repeat > 1 ? `, median of ${options.repeat} rounds` : ''}`,
    );
    const serverFrom = {
      bundle: 'the sources, bundled (esbuild)',
      source: 'the sources through tsx',
      dist: 'examples/server/dist',
    };
    out.push(
      `pinning: ${pinNote} · idt server from ${serverFrom[options.server]}${options.serverFlags.length ? ` with ${options.serverFlags.join(' ')}` : ', no Node.js flags'}${Object.entries(
        options.serverEnv,
      )
        .map(([name, value]) => `, ${name}=${value}`)
        .join('')}, IDT_ENVIRONMENT=${options.environment}${options.environment === 'Development' ? ' (no rate limiting)' : ''}`,
    );
    out.push(`load average (1, 5, 15 min): ${loadStart.join(', ')} at start, ${loadEnd.join(', ')} at end`);
    out.push('');
    out.push(table(rows));
    out.push('');
    out.push(
      `Concurrency: ${options.connections} connections (autocannon) for requests; ${SIGN_IN_CONCURRENCY} sign-ins or argon2 verifications in flight; ${options.connections} refresh-token chains.\n` +
        '"per s" is requests per second, or whole flows per second for the sign-in and refresh rows; latency is per request or per flow.\n' +
        'CPU in cores during the measured run: "server" is the server process (all its threads), "other" everything but the server and the\n' +
        'load generator (PostgreSQL included, and whatever else runs on the machine); per CPU-s = per second per core of server CPU.\n' +
        '"at scale" rows: the database holds 100,000 more users, 10,000 organizations, 100,000 memberships (45,000 in the platform\n' +
        `organization the lists read) and ${options.spreadClients.toLocaleString('en-US')} clients; their baseline is the same path on the database before seeding.`,
    );
    if (groups.has('scim-audit'))
      out.push(
        `scim-audit rows: an organization of ${SCIM_AUDIT.members.toLocaleString('en-US')} active members, the SCIM list over its users list (same 20 members, same server);\n` +
          `its audit chain of ${SCIM_AUDIT.auditRecords.toLocaleString('en-US')} records exported whole, one export at a time: "per s" is records per second of the median export, p50 / p99\n` +
          "the median / slowest whole export; the target is the server's peak RSS while it streams (in the note).",
      );
    if (options.repeat > 1) {
      out.push('Per second in every round (the table shows the median round):');
      for (const row of rows.filter((candidate) => candidate.rounds))
        out.push(
          `  ${row.scenario}: ${row.rounds.map((value) => value.toLocaleString('en-US')).join(', ')}${
            row.roundRatios
              ? ` (over the same round's baseline: ${row.roundRatios.map((value) => value.toFixed(2)).join(', ')}; median ${row.medianRoundRatio.toFixed(2)}×)`
              : ''
          }`,
        );
    }
    if (metrics.length) {
      out.push('');
      out.push(metricsTable(metrics));
    }
    const seedings = deployments.flatMap((deployment) =>
      Object.entries(deployment.seeding).map(
        ([label, summary]) => `idt/${labelOf(deployment.kind)}: ${label} in ${summary.seconds} s`,
      ),
    );
    if (seedings.length) out.push(`\nSeeding: ${seedings.join('; ')}.`);
    out.push('');
    // One line per distinct error (a deployment that cannot start fails every row of it the same way).
    const errors = new Map();
    for (const row of rows.filter((candidate) => candidate.error))
      errors.set(row.error, [...(errors.get(row.error) ?? []), row.scenario]);
    for (const [error, scenarios] of errors) out.push(`ERROR ${scenarios.join('; ')}: ${error}`);
    for (const row of rows.filter((candidate) => !candidate.error && candidate.note)) {
      out.push(`${!clean(row.result) ? 'ERRORS' : 'NOTE'} ${row.scenario}: ${row.note}`);
    }
    if (failedRows.length) out.push(`FAILED: ${failedRows.length} scenario(s) did not run or had failed requests (exit code 1).`);
    out.push(
      missed.length === 0
        ? failedRows.length === 0
          ? 'Every target met.'
          : 'Every target of the clean rows met.'
        : `TARGET MISSED: ${missed.map((row) => row.scenario ?? row.metric).join('; ')}${options.strict || failedRows.length ? '' : ' (exit code 0; pass --strict to fail)'}`,
    );
    if (!withPostgres && options.only !== 'sqlite') out.push('PostgreSQL was not reachable; its scenarios did not run.');
    for (const profile of profiles) {
      out.push('');
      out.push(`[${profile.scenario}] ${formatProfileSummary(profile)}`);
    }
    process.stdout.write(`${out.join('\n')}\n`);
  }

  clearTimeout(watchdog);
  await shutdown(failedRows.length > 0 || (options.strict && missed.length > 0) ? 1 : 0);
}

main().catch((error) => void shutdown(1, `benchmark failed: ${error.stack ?? error}`));
