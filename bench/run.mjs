#!/usr/bin/env node
/**
 * idt benchmarks: client-credentials tokens and a bearer-authenticated API
 * read against the real reference server on SQLite and on PostgreSQL, each
 * beside a baseline measured in the same run (stock oidc-provider with its
 * memory adapter; a bare node:http server). See docs/benchmarks.md.
 *
 *   npm run bench [-- --duration 10 --connections 20 --only sqlite|postgres --json --strict]
 *
 * Every server and the load generator (autocannon) run as separate child
 * processes, pinned to different cores with taskset when it exists.
 */
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDistStale } from '../scripts/dist-stale.mjs';
import { formatProfileSummary, summarizeProfile } from './profile-summary.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
process.chdir(ROOT);

// ---------------------------------------------------------------- options

const USAGE = `Usage: npm run bench -- [options]

  --duration <s>      measured seconds per scenario (default 10; env BENCH_DURATION)
  --warmup <s>        warm-up seconds before each measurement (default 3; env BENCH_WARMUP)
  --connections <n>   concurrent connections (default 20; env BENCH_CONNECTIONS)
  --repeat <n>        measure every scenario n times, alternating with its baseline; report the median
                      (default 1; env BENCH_REPEAT)
  --only <what>       sqlite | postgres: run the baselines and that database only (env BENCH_ONLY)
  --group <what>      tokens | api: run that group of scenarios only (env BENCH_GROUP)
  --server <mode>     how the idt server runs (env BENCH_SERVER):
                        bundle  (default) the current sources bundled by esbuild into bench/.build/, run by plain node
                        source  the TypeScript sources through tsx (adds ~50 MiB RSS: the loader thread)
                        dist    the built examples/server/dist (run \`npm run build\` first)
  --quiet <s>         before each measurement, wait up to <s> seconds for the machine to be idle
                      (under 0.25 busy cores over 2 s; default 0: do not wait; env BENCH_QUIET)
  --environment <e>   IDT_ENVIRONMENT of the idt servers: Production (default), Testing or Development
                      (Development turns rate limiting off: a way to measure what it costs; env BENCH_ENVIRONMENT)
  --profile           write a CPU profile of every idt server run (bench/profiles/) and print its hot spots
  --no-diagnostics    skip the diagnostic GET /health run (the HTTP pipeline alone)
  --no-pin            do not pin processes to cores even when taskset exists
  --json              print the results as JSON instead of a table
  --strict            exit 1 when a target is missed
  --help

PostgreSQL: IDT_BENCH_POSTGRES_URL (default postgres://postgres@127.0.0.1:5432/postgres) must
allow creating databases; a throwaway database is created and dropped.`;

function parseArgs(argv) {
  const options = {
    duration: Number(process.env.BENCH_DURATION ?? 10),
    warmup: Number(process.env.BENCH_WARMUP ?? 3),
    connections: Number(process.env.BENCH_CONNECTIONS ?? 20),
    only: process.env.BENCH_ONLY ?? undefined,
    group: process.env.BENCH_GROUP ?? undefined,
    server: process.env.BENCH_SERVER ?? 'bundle',
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
    const [flag, inline] = argv[i].split('=', 2);
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
      case '--server':
        options.server = value();
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
  if (options.group !== undefined && !['tokens', 'api'].includes(options.group)) problems.push('--group must be tokens or api');
  if (!(Number.isInteger(options.repeat) && options.repeat >= 1 && options.repeat <= 20))
    problems.push('--repeat must be a whole number between 1 and 20');
  if (!(options.quiet >= 0 && options.quiet <= 3600)) problems.push('--quiet must be between 0 and 3600 seconds');
  if (!['Production', 'Testing', 'Development'].includes(options.environment))
    problems.push('--environment must be Production, Testing or Development');
  if (!['bundle', 'source', 'dist'].includes(options.server)) problems.push('--server must be bundle, source or dist');
  if (problems.length) {
    console.error(`${problems.join('\n')}\n\n${USAGE}`);
    process.exit(2);
  }
  return options;
}

const options = parseArgs(process.argv.slice(2));
const log = (message) => process.stderr.write(`[bench] ${message}\n`);

const TARGETS = { tokens: 0.85, api: 0.3 };
const MAX_FAILED_RATIO = 0.01;
const RATE_LIMIT = '100000000';
const POSTGRES_ADMIN_URL = process.env.IDT_BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

// ---------------------------------------------------------------- cores

const cpuCount = typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length;
const hasTaskset = spawnSync('sh', ['-c', 'command -v taskset'], { encoding: 'utf8' }).status === 0;
const pinning = options.pin && hasTaskset && cpuCount >= 2;
const SERVER_CORE = '0';
const LOAD_CORE = '1';
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
  const onData = (chunk) => {
    for (const line of chunk.toString('utf8').split('\n')) {
      if (!line) continue;
      lines.push(line);
      if (lines.length > 200) lines.shift();
      for (const listener of listeners) listener(line);
    }
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve({ code, signal })));
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
    .map((line) => `    | ${line}`)
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

const loadAverage = () => os.loadavg().map((value) => Number(value.toFixed(2)));

function decodeJwtHeader(token) {
  return JSON.parse(Buffer.from(String(token).split('.')[0] ?? '', 'base64url').toString('utf8'));
}

function basicAuth(clientId, clientSecret) {
  return `Basic ${Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(clientSecret)}`).toString('base64')}`;
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

/** Runs the load generator in its own process (on the load core) and returns its figures. */
async function measure(name, request, serverPid) {
  await waitForQuiet(name);
  const spec = {
    ...request,
    connections: options.connections,
    duration: options.duration,
    warmup: options.warmup,
    serverPid,
  };
  log(`${name}: warm-up ${options.warmup} s, then ${options.duration} s with ${options.connections} connections`);
  const loadBefore = loadAverage();
  const lines = await runChild(`load generator (${name})`, [process.execPath, 'bench/load.mjs', JSON.stringify(spec)], {
    core: LOAD_CORE,
    timeoutMs: (options.warmup + options.duration + 60) * 1000,
  });
  const last = [...lines].reverse().find((line) => line.startsWith('{'));
  if (!last) throw new Error(`${name}: the load generator printed no result\n${tail(lines)}`);
  return { ...JSON.parse(last), loadBefore, loadAfter: loadAverage() };
}

// ---------------------------------------------------------------- the idt server

let bundlePath;

/**
 * Bundles the reference server from the current sources (workspace packages
 * resolved to their `src/` through the tsconfig paths; npm dependencies stay
 * external) into bench/.build/, with a source map for the profile summary.
 * Nothing in the packages' `dist/` is read or written.
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
    plugins: [
      {
        name: 'external-npm-dependencies',
        setup(pluginBuild) {
          // Bare imports other than the workspace packages stay imports of node_modules, resolved
          // from the importing package (not from bench/.build): packages/notifications has its own
          // ws 8 while the root node_modules holds another package's ws 7.
          pluginBuild.onResolve({ filter: /^[^./]/ }, async (args) => {
            if (args.path.startsWith('@idt/') || args.pluginData === 'resolving') return undefined;
            if (args.path.startsWith('node:')) return { path: args.path, external: true };
            const resolved = await pluginBuild.resolve(args.path, {
              kind: args.kind,
              resolveDir: args.resolveDir,
              pluginData: 'resolving',
            });
            return { path: resolved.errors.length || !resolved.path ? args.path : resolved.path, external: true };
          });
        },
      },
    ],
  });
  return outfile;
}

function serverArgv(command, extra = []) {
  if (options.server === 'dist') return [process.execPath, ...extra, 'examples/server/dist/main.js', command];
  if (options.server === 'bundle') return [process.execPath, ...extra, bundlePath, command];
  return [process.execPath, ...extra, '--import', 'tsx', 'examples/server/src/main.ts', command];
}

/** Creates the throwaway database of one idt run; returns its URL and how to remove it. */
async function createBenchDatabase(kind, dir) {
  if (kind === 'sqlite') return { url: `sqlite:${join(dir, 'idt.sqlite')}`, drop: async () => undefined };
  const { default: pg } = await import('pg');
  const name = `idt_bench_${process.pid}_${Date.now().toString(36)}`;
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
 * administrator over HTTP, and a service-account client with `users.read`.
 */
async function prepareIdt(kind) {
  const dir = mkdtempSync(join(os.tmpdir(), `idt-bench-${kind}-`));
  cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
  const database = await createBenchDatabase(kind, dir);
  cleanups.push(database.drop);
  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  const env = {
    NODE_ENV: 'production',
    IDT_ENVIRONMENT: options.environment,
    IDT_DATABASE_URL: database.url,
    IDT_DATA_DIR: dir,
    PORT: String(port),
    HOST: '127.0.0.1',
    IDT_ISSUER: baseUrl,
    IDT_KEY_ENCRYPTION_SECRET: randomBytes(32).toString('base64url'),
    // Production requires an SMTP URL; nothing is sent during the benchmark.
    IDT_SMTP_URL: 'smtp://127.0.0.1:2525',
    IDT_LOG_LEVEL: 'warn',
    // One token serves the whole API group, however long it runs.
    IDT_ACCESS_TOKEN_MINUTES: '1440',
    IDT_RATE_LIMIT_AUTH_PERMIT_LIMIT: RATE_LIMIT,
    IDT_RATE_LIMIT_UPLOAD_PERMIT_LIMIT: RATE_LIMIT,
    IDT_RATE_LIMIT_REGISTRATION_PERMIT_LIMIT: RATE_LIMIT,
    IDT_RATE_LIMIT_GLOBAL_PERMIT_LIMIT: RATE_LIMIT,
  };
  log(`idt/${kind}: migrating ${kind === 'sqlite' ? database.url : 'a throwaway PostgreSQL database'}`);
  await runChild(`idt migrate (${kind})`, serverArgv('migrate'), { env, timeoutMs: 120_000 });

  const server = startChild(`idt server (${kind}, setup)`, serverArgv('serve'), { env });
  await server.waitForLine(/listening on/, 60_000);
  const setup = await fetchWithTimeout(`${baseUrl}/v1/identity/setup/admin`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      email: 'bench-admin@example.com',
      password: 'correct horse battery staple',
      firstName: 'Bench',
      lastName: 'Admin',
      organizationName: 'Bench Platform',
    }),
  });
  if (setup.status !== 201) throw new Error(`idt/${kind}: setup answered ${setup.status}: ${await setup.text()}`);
  const { organizationId } = await setup.json();
  await server.stop();

  const lines = await runChild(
    `register client (${kind})`,
    [process.execPath, '--import', 'tsx', 'bench/setup-clients.ts', organizationId],
    { env, timeoutMs: 60_000 },
  );
  const registration = JSON.parse([...lines].reverse().find((line) => line.startsWith('{')) ?? 'null');
  if (!registration?.clientSecret) throw new Error(`idt/${kind}: client registration printed nothing usable\n${tail(lines)}`);
  return {
    kind,
    env,
    baseUrl,
    ...registration,
    tokenRequest: tokenRequest(baseUrl, registration.clientId, registration.clientSecret),
  };
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

/** Starts the idt server on the server core (profiled with --profile) and waits until it answers. */
async function startIdt(deployment, label) {
  const { extra, profileDir } = profiling(label);
  const server = startChild(`idt server (${label})`, serverArgv('serve', extra), { env: deployment.env, core: SERVER_CORE });
  await server.waitForLine(/listening on/, 60_000);
  return { server, profileDir };
}

// ---------------------------------------------------------------- scenarios

const results = [];
const profiles = [];

/** GETs `url` once and checks it answers 200; returns the body size. */
async function probe(url, headers = {}) {
  const response = await fetchWithTimeout(url, { headers });
  const text = await response.text();
  if (response.status !== 200) throw new Error(`GET ${url} answered ${response.status}: ${text.slice(0, 500)}`);
  return Buffer.byteLength(text);
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

/** The stock oidc-provider baseline server. */
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
      {
        id: 'tokens-baseline',
        scenario: 'client credentials · stock oidc-provider (memory adapter)',
        baseline: true,
        request,
      },
    ],
  };
}

/** The bare node:http baseline server. */
async function startBareHttp() {
  const port = await freePort();
  const { extra, profileDir } = profiling('api-baseline');
  const server = startChild('bare node:http', [process.execPath, ...extra, 'bench/baseline-http.mjs', String(port)], {
    env: { NODE_ENV: 'production' },
    core: SERVER_CORE,
  });
  const request = { url: `http://127.0.0.1:${port}/v1/identity/users`, method: 'GET' };
  const responseBytes = await checked(server, async () => {
    await server.waitForLine(/^listening/, 30_000);
    return probe(request.url);
  });
  return {
    server,
    profileDir,
    scenarios: [{ id: 'api-baseline', scenario: 'GET JSON · bare node:http', baseline: true, request, responseBytes }],
  };
}

const labelOf = (kind) => (kind === 'sqlite' ? 'SQLite' : 'Postgres');

/** An idt server for the client-credentials scenario. */
async function startIdtTokens(deployment) {
  const { server, profileDir } = await startIdt(deployment, `tokens-${deployment.kind}`);
  await checked(server, () => checkToken(deployment.tokenRequest));
  return {
    server,
    profileDir,
    scenarios: [
      {
        id: `tokens-${deployment.kind}`,
        scenario: `client credentials · idt/${labelOf(deployment.kind)}`,
        request: deployment.tokenRequest,
      },
    ],
  };
}

/** An idt server for the bearer-authenticated read (and, on SQLite, the diagnostic GET /health). */
async function startIdtApi(deployment) {
  const { server, profileDir } = await startIdt(deployment, `api-${deployment.kind}`);
  const label = labelOf(deployment.kind);
  const scenarios = await checked(server, async () => {
    const token = await checkToken(deployment.tokenRequest);
    const headers = { authorization: `Bearer ${token}` };
    // The target scenario: the whole bearer path (local JWT verification, revocation and client
    // checks, permission expansion, rate limiting) on a read that needs nothing but the credential.
    const whoami = { url: `${deployment.baseUrl}/v1/identity/auth/whoami`, method: 'GET', headers };
    // Informational: a paged list that queries the database on every request.
    const users = { url: `${deployment.baseUrl}/v1/identity/users`, method: 'GET', headers };
    const list = [
      {
        id: `api-${deployment.kind}`,
        scenario: `GET /v1/identity/auth/whoami (Bearer) · idt/${label}`,
        request: whoami,
        responseBytes: await probe(whoami.url, whoami.headers),
      },
      {
        id: `users-${deployment.kind}`,
        scenario: `GET /v1/identity/users (Bearer, database read) · idt/${label}`,
        diagnostic: true,
        request: users,
        responseBytes: await probe(users.url, users.headers),
      },
    ];
    // Diagnostic, no target: the HTTP pipeline alone (anonymous, not rate limited, no database).
    if (options.diagnostics && deployment.kind === 'sqlite') {
      const health = { url: `${deployment.baseUrl}/health`, method: 'GET' };
      list.push({
        id: `health-${deployment.kind}`,
        scenario: `GET /health (no auth, no DB) · idt/${label}`,
        diagnostic: true,
        request: health,
        responseBytes: await probe(health.url),
      });
    }
    return list;
  });
  return { server, profileDir, scenarios };
}

/** The sample with the median requests/s (the lower one of an even count). */
function median(samples) {
  const sorted = [...samples].sort((a, b) => a.requestsPerSecond - b.requestsPerSecond);
  return sorted[Math.floor((sorted.length - 1) / 2)];
}

/**
 * Runs one group of scenarios: starts every server of the group (all pinned
 * to the server core; idle ones cost nothing), then measures the scenarios
 * in turn, baseline first, `--repeat` rounds, so that baseline and idt see
 * the same machine; each scenario reports its median round.
 */
async function runGroup(group, entries) {
  const running = [];
  for (const entry of entries) {
    try {
      running.push(await entry.start());
    } catch (error) {
      for (const id of entry.ids) record({ id, group, scenario: entry.name, ...entry.flags, error: error.message });
    }
  }
  const samples = new Map();
  const failures = new Map();
  try {
    for (let round = 1; round <= options.repeat; round++) {
      for (const { server, scenarios } of running) {
        for (const scenario of scenarios) {
          if (failures.has(scenario.id)) continue;
          const name = options.repeat > 1 ? `${scenario.scenario} [${round}/${options.repeat}]` : scenario.scenario;
          try {
            if (!server.running) throw new Error(`${server.name} is not running\n${tail(server.lines, 10)}`);
            const result = await measure(name, scenario.request, server.pid);
            result.memory = memoryOf(server.pid);
            samples.set(scenario.id, [...(samples.get(scenario.id) ?? []), result]);
            log(`${name}: ${Math.round(result.requestsPerSecond)} req/s, ${result.failed} failed`);
          } catch (error) {
            failures.set(scenario.id, error.message);
            log(`${name}: ${error.message}`);
          }
        }
      }
    }
  } finally {
    for (const { server, profileDir, scenarios } of running) await stopServer(server, profileDir, scenarios[0].id);
  }
  for (const { scenarios } of running) {
    for (const { id, scenario, baseline, diagnostic, responseBytes } of scenarios) {
      const flags = { ...(baseline ? { baseline } : {}), ...(diagnostic ? { diagnostic } : {}) };
      const rounds = samples.get(id);
      if (failures.has(id) || !rounds?.length) {
        record({ id, group, scenario, ...flags, error: failures.get(id) ?? 'not measured' });
        continue;
      }
      const result = median(rounds);
      record({
        id,
        group,
        scenario,
        ...flags,
        result,
        memory: result.memory,
        responseBytes,
        ...(rounds.length > 1 ? { rounds: rounds.map((round) => Math.round(round.requestsPerSecond)) } : {}),
      });
    }
  }
}

function record(row) {
  results.push(row);
}

// ---------------------------------------------------------------- report

function evaluate(rows) {
  const baselines = Object.fromEntries(rows.filter((row) => row.baseline).map((row) => [row.group, row]));
  return rows.map((row) => {
    if (row.baseline) return { ...row, pass: row.result ? row.result.failedRatio <= MAX_FAILED_RATIO : false };
    const base = baselines[row.group]?.result;
    if (!row.result || !base) return { ...row, pass: row.diagnostic ? undefined : false };
    const ratio = row.result.requestsPerSecond / base.requestsPerSecond;
    const errorsOk = row.result.failedRatio <= MAX_FAILED_RATIO;
    // Each round over the baseline measured just before it in the same round: the machine's
    // drift between rounds cancels out. Reported beside the ratio of medians, which decides.
    const baseRounds = baselines[row.group]?.rounds;
    const roundRatios =
      row.rounds && baseRounds?.length === row.rounds.length
        ? row.rounds.map((value, index) => value / baseRounds[index])
        : undefined;
    return {
      ...row,
      baselineRequestsPerSecond: base.requestsPerSecond,
      ratio,
      ...(roundRatios
        ? { roundRatios, medianRoundRatio: [...roundRatios].sort((a, b) => a - b)[Math.floor((roundRatios.length - 1) / 2)] }
        : {}),
      ...(row.diagnostic ? {} : { target: TARGETS[row.group] }),
      pass: row.diagnostic ? undefined : errorsOk && ratio >= TARGETS[row.group],
      ...(errorsOk ? {} : { note: `${(row.result.failedRatio * 100).toFixed(2)}% failed requests (max 1%)` }),
    };
  });
}

const ROW_ORDER = [
  'tokens-baseline',
  'tokens-sqlite',
  'tokens-postgres',
  'api-baseline',
  'api-sqlite',
  'api-postgres',
  'users-sqlite',
  'users-postgres',
  'health-sqlite',
];

/** Rows in table order: the token scenarios, then the API scenarios, each baseline first. */
function ordered(rows) {
  const rank = (row) => (ROW_ORDER.includes(row.id) ? ROW_ORDER.indexOf(row.id) : ROW_ORDER.length);
  return [...rows].sort((a, b) => rank(a) - rank(b));
}

function table(rows) {
  const header = [
    'scenario',
    'requests/s',
    'p50',
    'p99',
    'failed',
    'server CPU',
    'other CPU',
    'req/CPU-s',
    'RSS MiB',
    'baseline',
    'ratio',
    'target',
    'pass',
  ];
  const count = (value) => Math.round(value).toLocaleString('en-US');
  const body = ordered(rows).map((row) => {
    const r = row.result;
    const target = row.baseline || row.diagnostic ? '' : `≥ ${TARGETS[row.group]}×`;
    if (!r) return [row.scenario, '—', '—', '—', '—', '—', '—', '—', '—', '—', '—', target, 'ERROR'];
    const failed = r.failed;
    const pass = row.baseline
      ? row.pass
        ? ''
        : 'ERRORS'
      : row.diagnostic
        ? 'info'
        : row.ratio === undefined
          ? 'NO BASELINE'
          : row.pass
            ? 'yes'
            : 'NO';
    return [
      row.scenario,
      count(r.requestsPerSecond),
      `${r.latency.p50} ms`,
      `${r.latency.p99} ms`,
      failed === 0 ? '0' : `${failed} (${(r.failedRatio * 100).toFixed(1)}%)`,
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
  const widths = header.map((title, i) => Math.max(title.length, ...body.map((cells) => String(cells[i]).length)));
  const numeric = new Set([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  const line = (cells) =>
    `| ${cells.map((cell, i) => (numeric.has(i) ? String(cell).padStart(widths[i]) : String(cell).padEnd(widths[i]))).join(' | ')} |`;
  return [line(header), `|${widths.map((w, i) => (numeric.has(i) ? `${'-'.repeat(w + 1)}:` : '-'.repeat(w + 2))).join('|')}|`]
    .concat(body.map(line))
    .join('\n');
}

// ---------------------------------------------------------------- main

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
  log(`${machine.cores} cores (${machine.cpu}), Node ${machine.node}; ${pinNote}`);
  log(`load average at start: ${loadStart.join(', ')}`);
  if (loadStart[0] > 0.5 * cpuCount) log('the machine is busy; figures will be noisy (re-run when it is quieter)');
  if (options.server === 'bundle') {
    log('bundling the reference server from the sources (esbuild)');
    bundlePath = await buildBundle();
  }
  if (options.server === 'dist' && isDistStale())
    log('examples/server/dist is older than the sources; run `npm run build` first');

  const withPostgres = options.only !== 'sqlite' && (await postgresAvailable());
  const measurements = 7 * options.repeat;
  const budgetSeconds = measurements * (options.warmup + options.duration + options.quiet + 45) + 600;
  const watchdog = setTimeout(
    () => void shutdown(1, `the benchmark did not finish within ${budgetSeconds} s; giving up`),
    budgetSeconds * 1000,
  );
  watchdog.unref();

  const deployments = [];
  for (const kind of [...(options.only !== 'postgres' ? ['sqlite'] : []), ...(withPostgres ? ['postgres'] : [])]) {
    try {
      deployments.push(await prepareIdt(kind));
    } catch (error) {
      for (const group of ['tokens', 'api'])
        record({ id: `${group}-${kind}`, group, scenario: `${group} · idt/${labelOf(kind)}`, error: error.message });
    }
  }
  const failedStart = (ids, name, flags = {}) => ({ ids, name, flags });
  const runs = (group) => options.group === undefined || options.group === group;
  if (runs('tokens'))
    await runGroup('tokens', [
      { ...failedStart(['tokens-baseline'], 'stock oidc-provider', { baseline: true }), start: startStockProvider },
      ...deployments.map((deployment) => ({
        ...failedStart([`tokens-${deployment.kind}`], `client credentials · idt/${labelOf(deployment.kind)}`),
        start: () => startIdtTokens(deployment),
      })),
    ]);
  if (runs('api'))
    await runGroup('api', [
      { ...failedStart(['api-baseline'], 'bare node:http', { baseline: true }), start: startBareHttp },
      ...deployments.map((deployment) => ({
        ...failedStart([`api-${deployment.kind}`], `GET /v1/identity/users · idt/${labelOf(deployment.kind)}`),
        start: () => startIdtApi(deployment),
      })),
    ]);

  const rows = evaluate(results);
  const loadEnd = loadAverage();
  const report = {
    startedAt: started.toISOString(),
    machine,
    pinning: pinNote,
    server: options.server,
    environment: options.environment,
    settings: {
      duration: options.duration,
      warmup: options.warmup,
      connections: options.connections,
      repeat: options.repeat,
      quiet: options.quiet,
    },
    loadAverage: { start: loadStart, end: loadEnd },
    targets: TARGETS,
    results: ordered(rows),
    ...(profiles.length ? { profiles } : {}),
  };

  if (options.json) {
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  } else {
    const out = [];
    out.push('');
    out.push(
      `idt benchmarks, ${started.toISOString()} · ${machine.cores} × ${machine.cpu} · Node ${machine.node} · ${options.connections} connections, ${options.warmup} s warm-up + ${options.duration} s${options.repeat > 1 ? `, median of ${options.repeat} rounds` : ''}`,
    );
    const serverFrom = {
      bundle: 'the sources, bundled (esbuild)',
      source: 'the sources through tsx',
      dist: 'examples/server/dist',
    };
    out.push(
      `pinning: ${pinNote} · idt server from ${serverFrom[options.server]}, IDT_ENVIRONMENT=${options.environment}${options.environment === 'Development' ? ' (no rate limiting)' : ''}`,
    );
    out.push(`load average (1, 5, 15 min): ${loadStart.join(', ')} at start, ${loadEnd.join(', ')} at end`);
    out.push('');
    out.push(table(rows));
    out.push('');
    out.push(
      'CPU in cores during the measured run: "server" is the server process (all its threads), "other" everything but the server and the\n' +
        'load generator (PostgreSQL included, and whatever else runs on the machine); req/CPU-s = requests/s per core of server CPU.',
    );
    if (options.repeat > 1) {
      out.push('Requests/s of every round (the table shows the median round):');
      for (const row of ordered(rows).filter((candidate) => candidate.rounds))
        out.push(
          `  ${row.scenario}: ${row.rounds.map((value) => value.toLocaleString('en-US')).join(', ')}${
            row.roundRatios
              ? ` (over the same round's baseline: ${row.roundRatios.map((value) => value.toFixed(2)).join(', ')}; median ${row.medianRoundRatio.toFixed(2)}×)`
              : ''
          }`,
        );
    }
    for (const row of rows.filter((candidate) => candidate.error || candidate.note)) {
      out.push(`${row.scenario}: ${row.note ?? row.error}`);
    }
    const missed = rows.filter((row) => !row.baseline && !row.diagnostic && !row.pass);
    out.push(
      missed.length === 0
        ? 'Every target met.'
        : `TARGET MISSED: ${missed.map((row) => row.scenario).join('; ')}${options.strict ? '' : ' (exit code 0; pass --strict to fail)'}`,
    );
    if (!withPostgres && options.only !== 'sqlite') out.push('PostgreSQL was not reachable; its scenarios did not run.');
    for (const profile of profiles) {
      out.push('');
      out.push(`[${profile.scenario}] ${formatProfileSummary(profile)}`);
    }
    process.stdout.write(`${out.join('\n')}\n`);
  }

  clearTimeout(watchdog);
  const failed = rows.some((row) => !row.diagnostic && !row.pass);
  await shutdown(options.strict && failed ? 1 : 0);
}

main().catch((error) => void shutdown(1, `benchmark failed: ${error.stack ?? error}`));
