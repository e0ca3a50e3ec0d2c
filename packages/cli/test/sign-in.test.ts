import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { run } from '@idt/cli';
import { bootstrapAdmin, freePort, registerClient, startTestServer, type TestServer } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

/** The one error line and the hints of a failed run, without a stack. */
function errorOf(stderr: string): { line: string; hints: string[] } {
  const lines = stderr.trim().split('\n');
  const at = lines.findIndex((line) => line.startsWith('error: '));
  expect(at).toBeGreaterThanOrEqual(0);
  expect(stderr).not.toMatch(/^\s+at /m);
  return { line: lines[at] ?? '', hints: lines.slice(at + 1).map((hint) => hint.trim()) };
}

describe('idt sign-in', () => {
  let server: TestServer;
  let dir: string;
  let port: number;
  let envFile: string;

  beforeAll(async () => {
    server = await startTestServer();
    const admin = await bootstrapAdmin(server);
    port = await freePort();
    const client = await registerClient(server, await admin.token(), admin.organizationId, {
      kind: 'application',
      name: 'Terminal',
      redirectUris: [`http://127.0.0.1:${port}/callback`],
      scopes: ['openid', 'profile'],
    });
    dir = mkdtempSync(join(tmpdir(), 'idt-sign-in-'));
    envFile = join(dir, 'terminal.env');
    writeFileSync(
      envFile,
      [
        `OIDC_ISSUER=${server.url}`,
        `OIDC_CLIENT_ID=${client.clientId}`,
        `OIDC_CLIENT_SECRET=${client.clientSecret}`,
        `OIDC_REDIRECT_URI=http://127.0.0.1:${port}/callback`,
        'OIDC_SCOPES=openid profile',
        '',
      ].join('\n'),
    );
  });
  afterAll(async () => {
    await server?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  /** Starts a sign-in and returns the authorization URL it printed. */
  async function started(argv: string[] = []) {
    let stderr = '';
    const result = run(['sign-in', '--from', envFile, ...argv], {
      env: {},
      cwd: dir,
      stderr: {
        write: (chunk: string) => {
          stderr += chunk;
        },
      },
    });
    await expect.poll(() => stderr, { timeout: 10_000, interval: 50 }).toMatch(/Open this URL/);
    const url = new URL(/Open this URL in a browser and sign in:\s+(\S+)/.exec(stderr)?.[1] ?? '');
    return { result, url };
  }

  it('prints the authorization URL with PKCE and the loopback redirect, and reports a sign-in the provider ended', async () => {
    const { result, url } = await started();
    expect(url.href.startsWith(`${server.url}/`)).toBe(true);
    expect(Object.fromEntries(url.searchParams)).toMatchObject({
      response_type: 'code',
      redirect_uri: `http://127.0.0.1:${port}/callback`,
      scope: 'openid profile',
      code_challenge_method: 'S256',
    });
    // The provider is real: the URL answers with its sign-in page.
    expect((await fetch(url, { redirect: 'manual' })).status).toBeLessThan(400);
    // A redirect that is not this sign-in's is refused without ending it.
    const stranger = await fetch(`http://127.0.0.1:${port}/callback?code=x&state=other`);
    expect(stranger.status).toBe(400);
    const state = url.searchParams.get('state') ?? '';
    const denied = await fetch(`http://127.0.0.1:${port}/callback?error=access_denied&error_description=no&state=${state}`);
    expect(denied.status).toBe(400);
    const { exitCode, stderr } = await result;
    expect(exitCode).toBe(1);
    expect(errorOf(stderr).line).toBe('error: The provider ended the sign-in: access_denied (no). (SignIn.Refused)');
  });

  it('refuses a code the token endpoint does not know', async () => {
    const { result, url } = await started();
    const state = url.searchParams.get('state') ?? '';
    const page = await fetch(`http://127.0.0.1:${port}/callback?code=forged&state=${state}`);
    expect(page.status).toBe(400);
    expect(await page.text()).toContain('The provider refused the code. See the terminal.');
    const { exitCode, stderr } = await result;
    expect(exitCode).toBe(1);
    expect(errorOf(stderr).line).toMatch(
      /^error: The token endpoint refused the code \(HTTP 400, invalid_grant.*\(SignIn\.Refused\)$/,
    );
  });

  it('gives up after --timeout, and names a port in use', async () => {
    const timedOut = await run(['sign-in', '--from', envFile, '--timeout', '1'], { env: {}, cwd: dir });
    expect(timedOut.exitCode).toBe(1);
    expect(errorOf(timedOut.stderr).line).toBe(
      `error: No browser came back to http://127.0.0.1:${port}/callback within 1 s. (SignIn.TimedOut)`,
    );
    const taken: Server = createServer();
    await new Promise<void>((resolve) => taken.listen(port, '127.0.0.1', resolve));
    try {
      const inUse = await run(['sign-in', '--from', envFile], { env: {}, cwd: dir });
      expect(inUse.exitCode).toBe(1);
      expect(errorOf(inUse.stderr).line).toBe(
        `error: Port ${port} of http://127.0.0.1:${port}/callback is already in use by another process. (SignIn.PortInUse)`,
      );
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
  });

  it('names the issuer that does not answer, and an env file that is not an application’s', async () => {
    const down = join(dir, 'down.env');
    const closed = await freePort();
    writeFileSync(
      down,
      `OIDC_ISSUER=http://127.0.0.1:${closed}\nOIDC_CLIENT_ID=x\nOIDC_CLIENT_SECRET=y\nOIDC_REDIRECT_URI=http://127.0.0.1:${port}/callback\n`,
    );
    const unreachable = await run(['sign-in', '--from', down, '--json'], { env: {}, cwd: dir });
    expect(unreachable.exitCode).toBe(1);
    expect(JSON.parse(unreachable.stdout).error.code).toBe('SignIn.IssuerUnreachable');
    expect(errorOf(unreachable.stderr).hints[0]).toContain(`Check OIDC_ISSUER (http://127.0.0.1:${closed}) in ${down}`);
    const service = join(dir, 'service.env');
    writeFileSync(service, `OIDC_ISSUER=${server.url}\nOIDC_SERVICE_CLIENT_ID=sa-x\nOIDC_SERVICE_CLIENT_SECRET=y\n`);
    const wrong = await run(['sign-in', '--from', service], { env: {}, cwd: dir });
    expect(errorOf(wrong.stderr).line).toBe(
      `error: OIDC_CLIENT_ID, OIDC_CLIENT_SECRET, OIDC_REDIRECT_URI are not set in ${service}. (Config.Invalid)`,
    );
  });
});
