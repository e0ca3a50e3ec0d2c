import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { type TestDatabase, type TestServer, testDialects } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildIdt } from './build.js';
import {
  BIN,
  binaryShebang,
  type CliFixture,
  clientCredentials,
  decodeJwt,
  installIdt,
  PASSWORD,
  ROOT,
  readEnvFile,
  SETUP_ARGS,
  serviceAccountArgs,
  spawnIdt,
  spawnProcess,
  startCliFixture,
} from './support.js';

describe.each(testDialects())('the idt binary as a process on %s', (dialect) => {
  let fixture: CliFixture;
  let database: TestDatabase;
  let server: TestServer;
  let dir: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    fixture = await startCliFixture(dialect, 'idt-spawned-');
    ({ dir, database, server, env } = fixture);
  });
  afterAll(() => fixture.close());

  it('has the shebang that keeps node from taking --env-file, in the launcher and the build entry', () => {
    expect(binaryShebang()).toBe('#!/usr/bin/env -S node --');
    expect(readFileSync(BIN, 'utf8').split('\n')[0]).toBe(binaryShebang());
  });

  it('registers a service account whose sa.env alone gets a token with its org_id and scope', async () => {
    const setup = await spawnIdt([...SETUP_ARGS], { env, stdin: `${PASSWORD}\n` });
    expect(setup.stderr).toContain('Creating the first administrator');
    expect(setup.exitCode).toBe(0);

    // Run as an installed `idt` runs: an executable whose first line is the binary's shebang.
    const binary = await installIdt(dir);
    const registered = await spawnProcess(binary.path, serviceAccountArgs('Reporting', '--env-file', 'sa.env'), {
      env: { ...env, ...binary.env },
      cwd: dir,
    });
    expect(registered.stderr).toBe('');
    expect(registered.exitCode).toBe(0);
    expect(registered.stdout).toContain(`Client secret:  written to ${join(dir, 'sa.env')}`);
    expect(statSync(join(dir, 'sa.env')).mode & 0o777).toBe(0o600);

    // Everything below comes from sa.env only.
    const variables = readEnvFile(join(dir, 'sa.env'));
    const tokens = await clientCredentials(variables, variables.OIDC_SERVICE_SCOPES);
    const organization = await database.db('identity_organizations').where({ slug: 'acme' }).first('id');
    expect(decodeJwt(tokens.access_token)).toMatchObject({
      iss: server.url,
      sub: 'sa-acme-reporting',
      azp: 'sa-acme-reporting',
      org_id: organization.id,
      scope: 'users.read',
    });
    const users = await fetch(`${variables.BFF_API_BASE_URL}/v1/identity/users`, {
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
    expect(users.status).toBe(200);

    // Through npx: `npx -- idt` keeps node (which runs npx itself) from taking --env-file.
    const npx = await spawnProcess('npx', ['--', 'idt', ...serviceAccountArgs('Npx', '--env-file', 'npx.env')], {
      env: { ...env, ...binary.env },
      cwd: dir,
    });
    expect(npx.exitCode).toBe(0);
    expect(readEnvFile(join(dir, 'npx.env')).OIDC_SERVICE_CLIENT_ID).toBe('sa-acme-npx');

    // `npx idt … --env-out` works the same, and an existing file is kept without --force.
    const again = await spawnProcess('npx', ['idt', ...serviceAccountArgs('Billing', '--env-out', 'sa.env')], {
      env: { ...env, ...binary.env },
      cwd: dir,
    });
    expect(again.exitCode).toBe(1);
    // npm may add warnings of its own; idt's is one line.
    expect(again.stderr.split('\n')).toContain(
      `error: ${join(dir, 'sa.env')} exists; pass --force to overwrite it. (Cli.EnvFileExists)`,
    );
    expect(readEnvFile(join(dir, 'sa.env'))).toEqual(variables);
  });

  it('exits 2 on usage errors and 1 on failures, with one error line', async () => {
    const usage = await spawnIdt(['register-client', '--org', 'acme'], { env });
    expect(usage.exitCode).toBe(2);
    expect(usage.stderr).toContain("error: required option '--kind <kind>' not specified");
    const failed = await spawnIdt(['rotate-secret', 'sa-acme-nobody', '--json'], { env });
    expect(failed.exitCode).toBe(1);
    expect(JSON.parse(failed.stdout)).toMatchObject({ ok: false, error: { code: 'Clients.NotFound' } });
    expect(failed.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('serves the reference server until SIGTERM', async () => {
    const { bin } = await buildIdt();
    const child: ChildProcess = spawn(process.execPath, ['--', bin, 'serve', '--port', '0'], {
      cwd: ROOT,
      env: { ...process.env, ...env },
    });
    let stdout = '';
    child.stdout?.on('data', (chunk) => {
      stdout += chunk;
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      await expect.poll(() => stdout, { timeout: 20_000, interval: 100 }).toContain('Setup required: no');
      const url = /listening on (http:\/\/\S+)/.exec(stdout)?.[1];
      const response = await fetch(`${url}/v1/identity/setup/status`);
      expect(await response.json()).toEqual({ setupRequired: false });
    } finally {
      child.kill('SIGTERM');
    }
    expect(await exited).toBe(0);
  });
});
