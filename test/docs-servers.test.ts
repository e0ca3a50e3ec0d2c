import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createIdt, type Idt } from '@idt/core';
import { identity } from '@idt/identity';
import { oidc } from '@idt/oidc';
import { createTestDatabase, freePort, SETUP_ADMIN, type TestDatabase } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const SCRATCH = join(ROOT, 'test', '.tmp');
const TSX_LOADER = pathToFileURL(createRequire(join(ROOT, 'package.json')).resolve('tsx')).href;

/** The first ```ts block of a page (after a heading, when given), as written. */
function snippet(page: string, heading?: string): string {
  const markdown = readFileSync(join(ROOT, page), 'utf8');
  const at = heading ? markdown.indexOf(`## ${heading}\n`) : 0;
  if (at === -1) throw new Error(`No heading "${heading}" in ${page}`);
  const match = /^```ts\n([\s\S]*?)^```$/m.exec(markdown.slice(at));
  if (!match?.[1]) throw new Error(`No ts block${heading ? ` under "${heading}"` : ''} in ${page}`);
  return match[1];
}

/** A snippet running in its own process. */
interface RunningSnippet {
  readonly output: () => string;
  stop(): void;
}

/**
 * Runs a snippet with tsx from a scratch working directory (so a relative
 * `./data` lands there); the @idt/* imports resolve to the sources through
 * the repository's tsconfig.json, other imports to the root node_modules.
 * Resolves once `ready` answers.
 */
async function runSnippet(
  code: string,
  name: string,
  cwd: string,
  env: Record<string, string>,
  ready: string,
): Promise<RunningSnippet> {
  mkdirSync(SCRATCH, { recursive: true });
  const file = join(SCRATCH, `snippet-${process.pid}-${name}.ts`);
  writeFileSync(file, code);
  let output = '';
  const child: ChildProcess = spawn(process.execPath, ['--import', TSX_LOADER, file], {
    cwd,
    env: { ...process.env, TSX_TSCONFIG_PATH: join(ROOT, 'tsconfig.json'), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (chunk) => {
    output += chunk;
  });
  child.stderr?.on('data', (chunk) => {
    output += chunk;
  });
  const stop = () => {
    child.kill('SIGTERM');
    rmSync(file, { force: true });
  };
  const deadline = Date.now() + 45_000;
  for (;;) {
    try {
      await fetch(ready);
      return { output: () => output, stop };
    } catch {
      // not listening yet
    }
    if (child.exitCode !== null || Date.now() > deadline) {
      stop();
      throw new Error(`The snippet ${name} did not start:\n${output}`);
    }
    // Real I/O: the next try to reach the snippet's server while its process starts.
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

describe.each([
  ['docs/embedding.md', 'A minimal server'],
  ['examples/server/README.md', undefined],
] as const)('the server of %s runs as written', (page, heading) => {
  let running: RunningSnippet | undefined;
  let base: string;
  const dataDir = mkdtempSync(join(tmpdir(), 'idt-snippet-'));

  beforeAll(async () => {
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    running = await runSnippet(
      snippet(page, heading),
      page.replace(/\W/g, '-'),
      dataDir,
      {
        IDT_ENVIRONMENT: 'Development',
        IDT_DATABASE_URL: `sqlite:${join(dataDir, 'idt.sqlite')}`,
        IDT_ISSUER: base,
        HOST: '127.0.0.1',
        PORT: String(port),
      },
      `${base}/health`,
    );
  }, 60_000);

  afterAll(() => {
    running?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('serves setup mode: status, the 503 gate, the first administrator, then 404 for unknown paths', async () => {
    expect(await (await fetch(`${base}/v1/identity/setup/status`)).json()).toEqual({ setupRequired: true });
    const gated = await fetch(`${base}/v1/anything`);
    expect(gated.status).toBe(503);
    expect(((await gated.json()) as { code: string }).code).toBe('Setup.Required');
    const created = await fetch(`${base}/v1/identity/setup/admin`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(SETUP_ADMIN),
    });
    expect(created.status).toBe(201);
    expect(await (await fetch(`${base}/v1/identity/setup/status`)).json()).toEqual({ setupRequired: false });
    expect((await fetch(`${base}/v1/nope`)).status).toBe(404);
    expect((await fetch(`${base}/health/ready`)).status).toBe(200);
  });
});

describe('the resource server of docs/embedding.md validates idt access tokens as written', () => {
  const OPERATOR = { userId: null, platformAdmin: true } as const;
  let database: TestDatabase;
  let idt: Idt<readonly [ReturnType<typeof identity>, ReturnType<typeof oidc>]>;
  let running: RunningSnippet | undefined;
  let issuer: string;
  let api: string;

  /** A client_credentials access token of a new service account of the organization. */
  async function serviceToken(organizationId: string, name: string, scopes: string[]) {
    const { client, clientSecret } = await idt.services.oidc.clients.register(OPERATOR, organizationId, {
      kind: 'service-account',
      name,
      scopes,
    });
    const response = await fetch(`${issuer}/connect/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: client.clientId,
        client_secret: clientSecret,
        scope: scopes.join(' '),
      }).toString(),
    });
    expect(response.status, await response.clone().text()).toBe(200);
    return { clientId: client.clientId, token: ((await response.json()) as { access_token: string }).access_token };
  }

  let organizationId: string;

  beforeAll(async () => {
    database = await createTestDatabase('sqlite');
    const port = await freePort();
    issuer = `http://127.0.0.1:${port}/idt`;
    idt = await createIdt({
      database: database.db,
      baseUrl: issuer,
      env: { IDT_ENVIRONMENT: 'Testing', IDT_LOG_LEVEL: 'silent', IDT_DATA_DIR: database.dataDir },
      modules: [identity(), oidc()],
      migrations: 'run',
    });
    await idt.listen(port, '127.0.0.1');
    const setup = await fetch(`${issuer}/v1/identity/setup/admin`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(SETUP_ADMIN),
    });
    expect(setup.status).toBe(201);
    organizationId = ((await setup.json()) as { organizationId: string }).organizationId;

    const apiPort = await freePort();
    api = `http://127.0.0.1:${apiPort}`;
    running = await runSnippet(
      snippet('docs/embedding.md', 'Validating access tokens in another service'),
      'resource-server',
      database.dataDir,
      { ISSUER: issuer, PORT: String(apiPort) },
      api,
    );
  }, 60_000);

  afterAll(async () => {
    running?.stop();
    await idt?.close();
    await database?.destroy();
  });

  it('answers 200 with the claims for an access token with the scope, fetching the keys from the JWKS', async () => {
    const { clientId, token } = await serviceToken(organizationId, 'Reporting', ['users.read']);
    const response = await fetch(api, { headers: { authorization: `Bearer ${token}` } });
    expect(response.status, running?.output()).toBe(200);
    expect(await response.json()).toEqual({ subject: clientId, organization: organizationId, client: clientId });
  });

  it('answers 403 for a valid token without the scope', async () => {
    const { token } = await serviceToken(organizationId, 'Auditing', ['roles.read']);
    const response = await fetch(api, { headers: { authorization: `Bearer ${token}` } });
    expect(response.status).toBe(403);
    expect(response.headers.get('www-authenticate')).toContain('insufficient_scope');
  });

  it('answers 401 without a token, and for a token whose signature does not match', async () => {
    expect((await fetch(api)).status).toBe(401);
    const { token } = await serviceToken(organizationId, 'Forger', ['users.read']);
    const [header, payload, signature] = token.split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as Record<string, unknown>;
    const forged = `${header}.${Buffer.from(JSON.stringify({ ...claims, org_id: 'someone-else' })).toString('base64url')}.${signature}`;
    expect((await fetch(api, { headers: { authorization: `Bearer ${forged}` } })).status).toBe(401);
  });
});
