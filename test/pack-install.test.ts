import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { oidcClient, redeemCode, signIn } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { installedPackages, type PackedPackage, packPackages, quickInstallEnv, ROOT, userEnv } from './support/pack.js';
import { createPostgresDatabase } from './support/postgres.js';

/**
 * Installs @idt/problem, @idt/core, @idt/identity and @idt/oidc from the
 * tarballs `npm run pack:packages` makes (what the registry would serve) into
 * a fresh project with nothing but `pg` beside them, then runs a server script
 * there on plain Node and signs in through it with openid-client.
 * test/embedding-docs.test.ts installs them as docs/embedding.md says.
 */

const PACKAGES = ['problem', 'core', 'identity', 'oidc'] as const;
const run = promisify(execFile);

/** What must not be installed with identity + oidc (they belong to other modules or are optional). */
const UNWANTED = ['@scalar', 'busboy', '@aws-sdk', '@smithy', '@idt/storage', '@idt/inquiries', 'nodemailer', 'better-sqlite3'];

interface Manifest {
  readonly name: string;
  readonly version: string;
  readonly exports?: Record<string, unknown>;
}

/** What the server script prints once it is ready. */
interface Ready {
  readonly baseUrl: string;
  readonly clientId: string;
  readonly clientSecret: string;
  readonly redirectUri: string;
  readonly email: string;
  readonly password: string;
  readonly userId: string;
  readonly organizationId: string;
}

function manifestOf(pkg: string): Manifest {
  return JSON.parse(readFileSync(join(ROOT, 'packages', pkg, 'package.json'), 'utf8')) as Manifest;
}

/** The files an `exports` map points at, conditions and subpaths included. */
function exportTargets(value: unknown): string[] {
  if (typeof value === 'string') return [value.replace(/^\.\//, '')];
  if (value && typeof value === 'object') return Object.values(value).flatMap(exportTargets);
  return [];
}

/** The server a user writes: identity + oidc on node:http, Postgres, an in-memory mailer (so no nodemailer). */
const SERVER_SCRIPT = `import { createServer } from 'node:http';
import { createIdt } from '@idt/core';
import { identity } from '@idt/identity';
import { oidc } from '@idt/oidc';

// Listening first makes the port, and so the base URL (the issuer), known before createIdt.
const server = createServer();
await new Promise((resolve, reject) => {
  server.once('error', reject);
  server.listen(0, '127.0.0.1', resolve);
});
const baseUrl = \`http://127.0.0.1:\${server.address().port}/idt\`;

const sent = [];
const idt = await createIdt({
  database: process.env.DATABASE_URL,
  baseUrl,
  modules: [identity(), oidc()],
  migrations: 'run',
  mailer: { send: async (message) => void sent.push(message) },
  env: { IDT_ENVIRONMENT: 'Development', IDT_DATA_DIR: './data', IDT_LOG_LEVEL: 'warn' },
});
server.on('request', idt.handler);
idt.start();

const email = 'admin@example.com';
const password = 'correct horse battery staple';
const setup = await fetch(\`\${baseUrl}/v1/identity/setup/admin\`, {
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ email, password, firstName: 'Ada', lastName: 'Admin', organizationName: 'Platform' }),
});
if (setup.status !== 201) throw new Error(\`setup answered \${setup.status}: \${await setup.text()}\`);
const { userId, organizationId } = await setup.json();

const redirectUri = 'https://rp.example.com/callback';
const { client, clientSecret } = await idt.services.oidc.clients.register({ userId: null, platformAdmin: true }, organizationId, {
  kind: 'application',
  name: 'Installed host',
  redirectUris: [redirectUri],
  scopes: ['openid', 'profile', 'email', 'roles', 'offline_access', 'users.read'],
});

console.log(JSON.stringify({ baseUrl, clientId: client.clientId, clientSecret, redirectUri, email, password, userId, organizationId }));

const stop = async () => {
  server.close();
  server.closeAllConnections();
  await idt.close();
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
`;

const adminUrl = inject('postgresAdminUrl');

describe.skipIf(!adminUrl)('the packed packages installed into a fresh project (Postgres, no optional peers)', () => {
  let scratch = '';
  let project = '';
  const packed = new Map<string, PackedPackage>();
  let database: { url: string; drop(): Promise<void> } | undefined;
  let child: ChildProcess | undefined;
  let output = '';
  let ready: Ready;

  beforeAll(async () => {
    scratch = mkdtempSync(join(tmpdir(), 'idt-pack-install-'));
    project = join(scratch, 'app');
    const databasePromise = createPostgresDatabase(adminUrl);
    databasePromise.catch(() => undefined);

    for (const result of await packPackages(join(scratch, 'tarballs'))) packed.set(result.name, result);

    mkdirSync(project);
    const dependencies: Record<string, string> = { pg: '^8.16.0' };
    for (const pkg of PACKAGES) {
      const tarball = packed.get(manifestOf(pkg).name)?.file;
      if (!tarball) throw new Error(`npm run pack:packages made no tarball of @idt/${pkg}`);
      dependencies[manifestOf(pkg).name] = `file:${tarball}`;
    }
    writeFileSync(
      join(project, 'package.json'),
      `${JSON.stringify({ name: 'idt-pack-install', private: true, type: 'module', dependencies }, null, 2)}\n`,
    );
    await run('npm', ['install'], {
      cwd: project,
      env: userEnv(await quickInstallEnv(join(scratch, 'prebuilds'))),
      maxBuffer: 64 * 1024 * 1024,
    });

    database = await databasePromise;
    writeFileSync(join(project, 'server.mjs'), SERVER_SCRIPT);
    const started = spawn(process.execPath, ['server.mjs'], {
      cwd: project,
      env: userEnv({ DATABASE_URL: database.url }),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child = started;
    ready = await new Promise<Ready>((resolve, reject) => {
      // Real I/O: a guard in case the child process never prints its ready line.
      const timer = setTimeout(() => reject(new Error(`The server script did not start:\n${output}`)), 45_000);
      started.stderr?.on('data', (chunk) => {
        output += chunk;
      });
      started.stdout?.on('data', (chunk) => {
        output += chunk;
        const line = output.split('\n').find((candidate) => candidate.startsWith('{"baseUrl"'));
        if (line) {
          clearTimeout(timer);
          resolve(JSON.parse(line) as Ready);
        }
      });
      started.once('exit', (code) => {
        clearTimeout(timer);
        reject(new Error(`The server script exited (${code}):\n${output}`));
      });
    });
  }, 240_000);

  afterAll(async () => {
    if (child && child.exitCode === null) {
      const exited = new Promise((resolve) => child?.once('exit', resolve));
      child.kill('SIGTERM');
      // Real I/O: give the child up to 5 s to exit on SIGTERM before it is killed.
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5000))]);
      if (child.exitCode === null) child.kill('SIGKILL');
    }
    await database?.drop();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  }, 30_000);

  it('packs every file the exports maps name', () => {
    for (const pkg of PACKAGES) {
      const manifest = manifestOf(pkg);
      const files = new Set(packed.get(manifest.name)?.files);
      const missing = exportTargets(manifest.exports).filter((target) => !files.has(target));
      expect({ package: manifest.name, missing }).toEqual({ package: manifest.name, missing: [] });
      expect(files.has('README.md')).toBe(true);
    }
  });

  it('installs no docs viewer, upload parser, S3 client, other idt module or optional peer', () => {
    const installed = installedPackages(join(project, 'node_modules'));
    const names = installed.map((pkg) => pkg.name);
    expect(names).toEqual(expect.arrayContaining(['@idt/problem', '@idt/core', '@idt/identity', '@idt/oidc', 'pg']));
    const unwanted = installed
      .filter(({ name }) => UNWANTED.some((prefix) => name === prefix || name.startsWith(`${prefix}/`)) || /s3/i.test(name))
      .map(({ path }) => relative(project, path));
    expect(unwanted).toEqual([]);
    // Every installed @idt package came from a tarball of this run, not from a registry.
    for (const pkg of PACKAGES) {
      const installedManifest = JSON.parse(
        readFileSync(join(project, 'node_modules', '@idt', pkg, 'package.json'), 'utf8'),
      ) as Manifest;
      expect(installedManifest.version).toBe(manifestOf(pkg).version);
    }
  });

  it('signs in through the installed server with openid-client: discovery, authorize, code + PKCE, userinfo, refresh', async () => {
    const config = await oidcClient.discovery(
      new URL(ready.baseUrl),
      ready.clientId,
      { id_token_signed_response_alg: 'RS256' },
      oidcClient.ClientSecretPost(ready.clientSecret),
      { execute: [oidcClient.allowInsecureRequests] },
    );
    expect(config.serverMetadata().issuer).toBe(ready.baseUrl);
    expect(config.serverMetadata().authorization_endpoint).toBe(`${ready.baseUrl}/connect/authorize`);

    const result = await signIn(config, {
      redirectUri: ready.redirectUri,
      scope: 'openid profile email roles offline_access users.read',
      email: ready.email,
      password: ready.password,
    });
    const tokens = await redeemCode(config, result);
    expect(tokens.claims()).toMatchObject({ sub: ready.userId, iss: ready.baseUrl });

    const userinfo = await oidcClient.fetchUserInfo(config, tokens.access_token, ready.userId);
    expect(userinfo).toMatchObject({ sub: ready.userId, email: ready.email, org_id: ready.organizationId, roles: ['owner'] });

    const me = await fetch(`${ready.baseUrl}/v1/identity/users/me`, {
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
    expect(me.status).toBe(200);

    const refreshed = await oidcClient.refreshTokenGrant(config, tokens.refresh_token ?? '');
    expect(refreshed.access_token).toBeTruthy();
    expect(refreshed.refresh_token).toBeTruthy();
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);
  });

  it('serves the OpenAPI document but no Scalar viewer and no routes of modules it does not compose', async () => {
    expect((await fetch(`${ready.baseUrl}/openapi/v1.json`)).status).toBe(200);
    expect((await fetch(`${ready.baseUrl}/scalar`)).status).toBe(404);
    expect((await fetch(`${ready.baseUrl}/v1/storage/buckets`)).status).toBe(404);
  });
});
