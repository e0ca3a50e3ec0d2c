import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseEnv } from 'node:util';
import { type RunOptions, type RunResult, run } from '@idt/cli';
import {
  createTestDatabase,
  oidcClient,
  referenceMigrationSets,
  startTestServer,
  type TestDatabase,
  type TestDialect,
  type TestServer,
} from '@idt/testing';
import { buildIdt } from './build.js';

/** The repository root. */
export const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
/** The CLI's entry point in its TypeScript source (spawned runs use {@link buildIdt}'s build of it). */
export const BIN = join(ROOT, 'packages/cli/src/bin.ts');

/** The first administrator's password of the CLI suites. */
export const PASSWORD = 'correct horse battery staple';

/** `idt setup` for the first administrator, the password read from stdin (`${PASSWORD}\n`). */
export const SETUP_ARGS: readonly string[] = [
  'setup',
  '--email',
  'ada@example.com',
  '--password-stdin',
  '--first-name',
  'Ada',
  '--last-name',
  'L',
  '--organization',
  'Acme',
];

/** Settings of every test run: the Testing environment, quiet logs, and a scratch data directory. */
export function testEnv(database: string, dataDir: string, extra: Record<string, string> = {}): Record<string, string> {
  return { IDT_ENVIRONMENT: 'Testing', IDT_LOG_LEVEL: 'warn', IDT_DATABASE_URL: database, IDT_DATA_DIR: dataDir, ...extra };
}

/** `idt register-client` arguments: a service account of the organization `acme` with `users.read`, then `extra`. */
export function serviceAccountArgs(name: string, ...extra: string[]): string[] {
  return ['register-client', '--org', 'acme', '--kind', 'service-account', '--name', name, '--scope', 'users.read', ...extra];
}

/**
 * The seed of the operator suites: Ada Lovelace, the first administrator
 * (password {@link PASSWORD}) of the platform organization Acme, and Bob
 * Builder, an admin of Globex.
 */
export const OPERATOR_SEED = {
  admin: { email: 'ada@example.com', password: PASSWORD, firstName: 'Ada', lastName: 'Lovelace', organizationName: 'Acme' },
  organizations: [{ name: 'Globex' }],
  users: [
    {
      email: 'bob@example.com',
      firstName: 'Bob',
      lastName: 'Builder',
      memberships: [{ organization: 'Globex', roles: ['admin'] }],
    },
  ],
} as const;

/**
 * Writes {@link OPERATOR_SEED} to `seed.json` in `dir`, for `idt seed --file`.
 *
 * @returns the path of the file.
 * @example
 * const seed = writeOperatorSeed(fixture.dir);
 * await idt(fixture.env, ['seed', '--file', seed]);
 */
export function writeOperatorSeed(dir: string): string {
  const path = join(dir, 'seed.json');
  writeFileSync(path, JSON.stringify(OPERATOR_SEED));
  return path;
}

/** A migrated throwaway database with the reference server on it, a scratch directory, and the CLI's settings for both. */
export interface CliFixture {
  readonly dir: string;
  readonly database: TestDatabase;
  readonly server: TestServer;
  /** The CLI's environment: Testing, the database, the scratch data directory, and the server's issuer. */
  readonly env: Record<string, string>;
  close(): Promise<void>;
}

/** Starts a {@link CliFixture}: the server first, so the CLI writes its issuer into env files. */
export async function startCliFixture(dialect: TestDialect, prefix: string): Promise<CliFixture> {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const database = await createTestDatabase(dialect, referenceMigrationSets);
  const server = await startTestServer({ database });
  return {
    dir,
    database,
    server,
    env: testEnv(database.url, dir, { IDT_ISSUER: server.origin }),
    async close() {
      await server.close();
      await database.destroy();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Runs `idt` in-process, with `env` as the whole environment. */
export function idt(env: Record<string, string>, argv: string[], options: Omit<RunOptions, 'env'> = {}): Promise<RunResult> {
  return run(argv, { env, ...options });
}

/** The one JSON document a `--json` run printed. */
export function jsonOf<T = Record<string, any>>(result: RunResult): T {
  return JSON.parse(result.stdout) as T;
}

/** What a spawned process did. */
export interface Spawned {
  readonly exitCode: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Environment of spawned runs: this process's, without its idt settings, then `env`. */
function spawnEnv(env: Record<string, string>): NodeJS.ProcessEnv {
  const base = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('IDT_')));
  return { ...base, ...env };
}

/** Runs a spawned process to its end, feeding `stdin`. */
export function spawnProcess(
  command: string,
  args: string[],
  options: { env: Record<string, string>; cwd?: string; stdin?: string },
): Promise<Spawned> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd ?? ROOT, env: spawnEnv(options.env) });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.once('error', reject);
    child.once('close', (exitCode) => resolve({ exitCode, stdout, stderr }));
    child.stdin.end(options.stdin ?? '');
  });
}

/**
 * Spawns `node -- <the build of packages/cli/src/bin.ts> …` ({@link buildIdt}):
 * the `--` ends node's options as the binary's shebang does, so `--env-file`
 * reaches idt.
 */
export async function spawnIdt(args: string[], options: { env: Record<string, string>; cwd?: string; stdin?: string }) {
  const { bin } = await buildIdt();
  return spawnProcess(process.execPath, ['--', bin, ...args], options);
}

/** The binary's first line: the shebang `npx` and a global install run it with. */
export function binaryShebang(): string {
  return readFileSync(join(ROOT, 'packages/cli/bin/idt.js'), 'utf8').split('\n')[0] ?? '';
}

/**
 * Makes `dir` a project with `idt` installed the way npm installs it: a
 * `package.json`, `node_modules/@idt/*` (the packages of {@link buildIdt}'s
 * build, so a config file imports the instances the binary runs), and an
 * executable `node_modules/.bin/idt` whose first line is the binary's
 * shebang. Running it, or `npx -- idt` in `dir`, exercises the shebang
 * exactly as an install does.
 */
export async function installIdt(dir: string): Promise<{ bin: string; path: string; env: Record<string, string> }> {
  const build = await buildIdt();
  const bin = join(dir, 'node_modules', '.bin');
  mkdirSync(bin, { recursive: true });
  symlinkSync(build.scope, join(dir, 'node_modules', '@idt'), 'dir');
  writeFileSync(join(dir, 'package.json'), '{ "name": "idt-example", "private": true }\n');
  const path = join(bin, 'idt');
  writeFileSync(path, `${binaryShebang()}\nimport(${JSON.stringify(pathToFileURL(build.bin).href)});\n`);
  chmodSync(path, 0o755);
  // Offline: npx must find the local binary and never ask a registry for a package named idt.
  return { bin, path, env: { npm_config_offline: 'true', npm_config_update_notifier: 'false' } };
}

/** Reads an env file the way Node's `--env-file` does. */
export function readEnvFile(path: string): Record<string, string> {
  return parseEnv(readFileSync(path, 'utf8')) as Record<string, string>;
}

/** The claims of a JWT (no verification: the server issued it in the test). */
export function decodeJwt(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8')) as Record<string, unknown>;
}

/** A client-credentials grant built from a service account's env variables only (SPEC 2.1). */
export async function clientCredentials(variables: Record<string, string>, scope = variables.OIDC_SERVICE_SCOPES ?? '') {
  const config = await oidcClient.discovery(
    new URL(variables.OIDC_ISSUER ?? ''),
    variables.OIDC_SERVICE_CLIENT_ID ?? '',
    {},
    oidcClient.ClientSecretPost(variables.OIDC_SERVICE_CLIENT_SECRET ?? ''),
    { execute: [oidcClient.allowInsecureRequests] },
  );
  return oidcClient.clientCredentialsGrant(config, { scope });
}

/** A raw client-credentials request, for the status of a refused one. */
export async function tokenRequest(server: TestServer, clientId: string, clientSecret: string, scope: string) {
  const response = await server.fetch('/connect/token', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'client_credentials', client_id: clientId, client_secret: clientSecret, scope }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

/** Waits until the wall clock is in a later whole second (revocation watermarks are whole seconds). */
export async function nextSecond(since = Date.now()): Promise<void> {
  const wait = (Math.floor(since / 1000) + 1) * 1000 + 50 - Date.now();
  // Not a time rule of ours: the CLI runs in its own process on the wall clock, and oidc-provider stamps
  // `iat` from its own Date.now(); no injected clock reaches either, so only the next real second does (≤ 1 s).
  if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
}
