import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Prompter } from '@idt/cli';
import { createTestDatabase, startTestServer, type TestDatabase, type TestServer, testDialects } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  clientCredentials,
  decodeJwt,
  idt,
  jsonOf,
  nextSecond,
  readEnvFile,
  serviceAccountArgs,
  testEnv,
  tokenRequest,
} from './support.js';

const PASSWORD = 'correct horse battery staple';
const ADMIN = ['--email', 'ada@example.com', '--first-name', 'Ada', '--last-name', 'Lovelace', '--organization', 'Acme'];

/** A prompter that answers from a script and records the questions. */
function scriptedPrompter(answers: string[]): Prompter & { asked: string[] } {
  const asked: string[] = [];
  const next = async (message: string, validate?: (value: string) => true | string) => {
    asked.push(message);
    const answer = answers.shift();
    if (answer === undefined) throw new Error(`No scripted answer for "${message}"`);
    const verdict = validate?.(answer) ?? true;
    if (verdict !== true) throw new Error(`"${answer}" rejected for "${message}": ${verdict}`);
    return answer;
  };
  return {
    asked,
    input: (message, options) => next(message, options?.validate),
    password: (message, options) => next(message, options?.validate),
  };
}

describe.each(testDialects())('idt commands on %s', (dialect) => {
  let database: TestDatabase;
  let server: TestServer;
  let dir: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'idt-cli-'));
    database = await createTestDatabase(dialect);
    env = testEnv(database.url, dir);
  });
  afterAll(async () => {
    await server?.close();
    await database.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  it('refuses every command but migrate while migrations are pending outside Testing, naming idt migrate', async () => {
    const development = { ...env, IDT_ENVIRONMENT: 'Development' };
    await database.db.raw('select 1'); // the database exists (an empty SQLite file), without any migration
    const result = await idt(development, ['register-client', '--org', 'acme', '--kind', 'service-account', '--name', 'X']);
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toContain('idt migrate');
    expect(result.stderr).toContain('(Migrations.Pending)');
    expect(result.stderr).toContain('@idt/identity: 0001_accounts');
  });

  it('lists pending migrations with --status, applies them, and lists none pending after', async () => {
    const before = await idt(env, ['migrate', '--status', '--json']);
    expect(before.exitCode).toBe(0);
    expect(jsonOf(before).pending).toBeGreaterThan(0);
    expect(jsonOf(before).sets.map((set: { owner: string }) => set.owner)).toEqual(
      expect.arrayContaining(['@idt/core', '@idt/identity', '@idt/oidc']),
    );

    const migrated = await idt(env, ['migrate']);
    expect(migrated.exitCode).toBe(0);
    expect(migrated.stdout).toMatch(/Migrations: \d+ applied on /);
    expect(migrated.stdout).toContain('applied  @idt/oidc: 0001_provider');
    expect(migrated.stderr).toContain('Applying migrations to');

    const after = await idt(env, ['migrate', '--status']);
    expect(after.exitCode).toBe(0);
    expect(after.stdout).toContain('Every migration is applied.');
    expect((await idt(env, ['migrate'])).stdout).toContain('Migrations: none pending');

    // The reference server on the same database, with the CLI's issuer equal to its own.
    server = await startTestServer({ database });
    env = { ...env, IDT_ISSUER: server.origin };
  });

  it('answers usage errors with exit code 2, on stderr and in --json', async () => {
    const unknownOption = await idt(env, ['migrate', '--frobnicate']);
    expect(unknownOption.exitCode).toBe(2);
    expect(unknownOption.stderr).toContain("unknown option '--frobnicate'");
    const missing = await idt(env, ['register-client', '--org', 'acme', '--name', 'X', '--json']);
    expect(missing.exitCode).toBe(2);
    expect(jsonOf(missing)).toEqual({ ok: false, error: { code: 'Cli.Usage', detail: expect.stringContaining('--kind') } });
    expect((await idt(env, ['rotate-secret'])).exitCode).toBe(2);
    expect((await idt(env, ['no-such-command'])).exitCode).toBe(2);
    expect((await idt(env, ['register-client', '--org', 'a', '--kind', 'robot', '--name', 'X'])).exitCode).toBe(2);
    const notOnATerminal = await idt(env, ['setup', '--email', 'ada@example.com']);
    expect(notOnATerminal.exitCode).toBe(2);
    expect(notOnATerminal.stderr).toContain('--password-stdin');
    const help = await idt(env, ['register-client', '--help']);
    expect(help.exitCode).toBe(0);
    expect(help.stdout).toContain('Examples:');
    expect(help.stdout).toContain('--env-out <path>');
  });

  it('validates setup input like the endpoint: a bad e-mail address fails with the validation problem line', async () => {
    const result = await idt(env, ['setup', ...ADMIN.slice(2), '--email', 'not-an-address', '--password-stdin'], {
      stdin: `${PASSWORD}\n`,
    });
    expect(result.exitCode).toBe(1);
    expect(result.stderr.trim().split('\n').at(-1)).toBe(
      'error: One or more fields are invalid. email: Enter a valid e-mail address. (Validation.Failed)',
    );
    const json = await idt(env, ['setup', ...ADMIN.slice(2), '--email', 'nope', '--password-stdin', '--json'], {
      stdin: 'short\n',
    });
    expect(jsonOf(json)).toMatchObject({
      ok: false,
      error: { code: 'Validation.Failed', errors: { email: expect.any(Array), password: expect.any(Array) } },
    });
  });

  it('asks on a terminal for what the options do not give, the password twice, until the two match', async () => {
    const interactiveDatabase = await createTestDatabase(dialect);
    try {
      const scratch = testEnv(interactiveDatabase.url, dir);
      expect((await idt(scratch, ['migrate'])).exitCode).toBe(0);
      const prompter = scriptedPrompter([
        'grace@example.com',
        PASSWORD,
        'a different password',
        PASSWORD,
        PASSWORD,
        'Grace',
        'Hopper',
        'Navy',
      ]);
      const result = await idt(scratch, ['setup', '--json'], { prompter });
      expect(result.exitCode).toBe(0);
      expect(prompter.asked).toEqual([
        'E-mail address of the first administrator',
        'Password (12 to 256 characters)',
        'Repeat the password',
        'Password (12 to 256 characters)',
        'Repeat the password',
        'First name',
        'Last name',
        'Name of the platform organization',
      ]);
      expect(result.stderr).toContain('the passwords did not match');
      expect(jsonOf(result)).toMatchObject({ ok: true, email: 'grace@example.com', organizationName: 'Navy' });
      const user = await interactiveDatabase.db('identity_users').where({ email: 'grace@example.com' }).first();
      expect(user).toMatchObject({ first_name: 'Grace', last_name: 'Hopper' });

      // Once setup is complete it refuses before asking anything.
      const again = scriptedPrompter([]);
      const refused = await idt(scratch, ['setup'], { prompter: again });
      expect(refused.exitCode).toBe(1);
      expect(again.asked).toEqual([]);
    } finally {
      await interactiveDatabase.destroy();
    }
  });

  it('bootstraps setup from options and --password-stdin, and refuses once setup is complete', async () => {
    const result = await idt(env, ['setup', ...ADMIN, '--password-stdin'], { stdin: `${PASSWORD}\n` });
    expect(result.stderr).toBe('Creating the first administrator (hashing the password)…\n');
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toContain('Setup complete: ada@example.com owns the platform organization Acme.');
    const status = await server.fetch('/v1/identity/setup/status');
    expect(await status.json()).toEqual({ setupRequired: false });
    // The password is the line on stdin, without its line break: the admin can sign in with it.
    expect(await server.idt.services.identity.signIn.authenticate('ada@example.com', PASSWORD)).toEqual(expect.any(String));

    const again = await idt(env, ['setup', ...ADMIN, '--password-stdin'], { stdin: PASSWORD });
    expect(again.exitCode).toBe(1);
    expect(again.stderr).toContain('error: Setup is already complete; the first administrator exists. (Setup.AlreadyCompleted)');
    const json = await idt(env, ['setup', ...ADMIN, '--password-stdin', '--json'], { stdin: PASSWORD });
    expect(jsonOf(json)).toEqual({
      ok: false,
      error: { code: 'Setup.AlreadyCompleted', detail: 'Setup is already complete; the first administrator exists.' },
    });
  });

  it('registers a service account with --json and an env file of mode 0600 whose variables get a token', async () => {
    const envFile = join(dir, `${dialect}-reporting.env`);
    const result = await idt(env, [
      'register-client',
      '--org',
      'acme',
      '--kind',
      'service-account',
      '--name',
      'Reporting',
      '--scope',
      'users.read organizations.read',
      '--env-file',
      envFile,
      '--json',
    ]);
    expect(result.exitCode).toBe(0);
    const body = jsonOf(result);
    expect(body).toMatchObject({
      ok: true,
      client: { clientId: 'sa-acme-reporting', kind: 'service-account', scopes: ['users.read', 'organizations.read'] },
      clientSecret: expect.any(String),
      issuer: server.url,
      apiBaseUrl: server.url,
      envFile,
    });
    expect(statSync(envFile).mode & 0o777).toBe(0o600);
    const variables = readEnvFile(envFile);
    expect(variables).toEqual({
      OIDC_ISSUER: server.url,
      OIDC_SERVICE_CLIENT_ID: 'sa-acme-reporting',
      OIDC_SERVICE_CLIENT_SECRET: body.clientSecret,
      OIDC_SERVICE_SCOPES: 'users.read organizations.read',
      BFF_API_BASE_URL: server.url,
    });
    const tokens = await clientCredentials(variables, 'users.read');
    expect(decodeJwt(tokens.access_token)).toMatchObject({
      sub: 'sa-acme-reporting',
      org_id: body.client.organizationId,
      scope: 'users.read',
    });

    // Never overwrites without --force, and checks before creating anything.
    writeFileSync(join(dir, 'taken.env'), 'KEEP=1\n');
    const refused = await idt(env, serviceAccountArgs('Billing', '--env-out', join(dir, 'taken.env')));
    expect(refused.exitCode).toBe(1);
    expect(refused.stderr).toContain('taken.env exists; pass --force to overwrite it. (Cli.EnvFileExists)');
    expect(readFileSync(join(dir, 'taken.env'), 'utf8')).toBe('KEEP=1\n');
    expect(await database.db('oidc_clients').where({ client_id: 'sa-acme-billing' }).first()).toBeUndefined();

    const forced = await idt(env, serviceAccountArgs('Billing', '--env-out', join(dir, 'taken.env'), '--force'));
    expect(forced.exitCode).toBe(0);
    expect(statSync(join(dir, 'taken.env')).mode & 0o777).toBe(0o600);
    expect(readEnvFile(join(dir, 'taken.env')).OIDC_SERVICE_CLIENT_ID).toBe('sa-acme-billing');
  });

  it('registers an application with the application variables and a fresh cookie password', async () => {
    const envFile = join(dir, `${dialect}-dashboard.env`);
    const result = await idt(env, [
      'register-client',
      '--org',
      'acme',
      '--kind',
      'application',
      '--name',
      'Dashboard',
      '--scope',
      'openid',
      '--scope',
      'profile,email',
      '--redirect-uri',
      'http://localhost:3000/bff/callback',
      '--post-logout-redirect-uri',
      'http://localhost:3000/',
      '--env-file',
      envFile,
    ]);
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toContain('Registered application acme-dashboard for Acme (acme).');
    expect(result.stdout).toContain(`Client secret:  written to ${envFile}`);
    const variables = readEnvFile(envFile);
    const order = [...readFileSync(envFile, 'utf8').matchAll(/^([A-Z_]+)=/gm)].map((match) => match[1]);
    expect(order).toEqual([
      'OIDC_ISSUER',
      'OIDC_CLIENT_ID',
      'OIDC_CLIENT_SECRET',
      'OIDC_REDIRECT_URI',
      'OIDC_POST_LOGOUT_REDIRECT_URI',
      'OIDC_SCOPES',
      'BFF_API_BASE_URL',
      'COOKIE_PASSWORD',
    ]);
    expect(variables).toMatchObject({
      OIDC_CLIENT_ID: 'acme-dashboard',
      OIDC_REDIRECT_URI: 'http://localhost:3000/bff/callback',
      OIDC_POST_LOGOUT_REDIRECT_URI: 'http://localhost:3000/',
      OIDC_SCOPES: 'openid profile email',
    });
    expect(variables.COOKIE_PASSWORD?.length).toBeGreaterThanOrEqual(32);
    const stored = await server.idt.services.oidc.clients.findStored('acme-dashboard');
    expect(stored).toMatchObject({ kind: 'application', firstParty: false, organizationId: expect.any(String) });
  });

  it('gives the answers of the HTTP surface for bad registrations', async () => {
    const base = ['register-client', '--org', 'acme', '--kind', 'application', '--name', 'Broken'];
    const noRedirect = await idt(env, [...base, '--scope', 'openid']);
    expect(noRedirect.exitCode).toBe(1);
    expect(noRedirect.stderr).toContain('redirectUris: An application needs at least one redirect URI. (Validation.Failed)');
    const unknownScope = await idt(env, [...base, '--scope', 'nope', '--redirect-uri', 'https://app.example.com/cb', '--json']);
    expect(jsonOf(unknownScope)).toMatchObject({
      ok: false,
      error: { code: 'Validation.Failed', errors: { scopes: ['Unknown scope "nope".'] } },
    });
    const plainHttp = await idt(env, [...base, '--scope', 'openid', '--redirect-uri', 'http://app.example.com/cb']);
    expect(plainHttp.stderr).toContain('redirectUris[0]: Use https; http is allowed only for localhost and 127.0.0.1.');
    const taken = await idt(env, serviceAccountArgs('Reporting'));
    expect(taken.exitCode).toBe(1);
    expect(taken.stderr).toContain('(Clients.IdTaken)');
    const noOrganization = await idt(env, [
      'register-client',
      '--org',
      'initech',
      '--kind',
      'service-account',
      '--name',
      'X',
      '--scope',
      'users.read',
    ]);
    expect(noOrganization.exitCode).toBe(1);
    expect(noOrganization.stderr).toContain('error: No organization "initech". (Clients.NotFound)');
  });

  it('rotates a secret: the old one fails at the token endpoint, the new one works, the env file follows', async () => {
    const registered = jsonOf(await idt(env, serviceAccountArgs('Rotating', '--json')));
    const clientId = registered.client.clientId as string;
    const envFile = join(dir, `${dialect}-rotating.env`);
    const rotated = await idt(env, ['rotate-secret', clientId, '--env-file', envFile]);
    expect(rotated.exitCode).toBe(0);
    expect(rotated.stdout).toContain(`Rotated the secret of ${clientId}; the old secret no longer works.`);
    const variables = readEnvFile(envFile);
    expect(variables.OIDC_SERVICE_CLIENT_SECRET).not.toBe(registered.clientSecret);

    const old = await tokenRequest(server, clientId, registered.clientSecret, 'users.read');
    expect(old).toMatchObject({ status: 401, body: { error: 'invalid_client' } });
    const tokens = await clientCredentials(variables);
    expect(decodeJwt(tokens.access_token)).toMatchObject({ sub: clientId, scope: 'users.read' });

    // --revoke-active-tokens also ends the tokens issued so far.
    await nextSecond();
    const revoked = await idt(env, [
      'rotate-secret',
      clientId,
      '--revoke-active-tokens',
      '--env-file',
      envFile,
      '--force',
      '--json',
    ]);
    expect(jsonOf(revoked)).toMatchObject({ ok: true, client: { clientId, lastRotatedAt: expect.any(String) }, envFile });
    const call = await server.fetch('/v1/identity/users', { headers: { authorization: `Bearer ${tokens.access_token}` } });
    expect(call.status).toBe(401);

    // Not found: an unknown client, or one of another organization with --org.
    const unknown = await idt(env, ['rotate-secret', 'sa-acme-nobody']);
    expect(unknown.exitCode).toBe(1);
    // Without --org there is no "this organization" to speak of.
    expect(unknown.stderr).toBe('error: No client sa-acme-nobody exists. (Clients.NotFound)\n');
    expect(jsonOf(await idt(env, ['rotate-secret', 'sa-acme-nobody', '--json'])).error).toEqual({
      code: 'Clients.NotFound',
      detail: 'No client sa-acme-nobody exists.',
    });
    expect((await idt(env, ['clients', 'show', 'sa-acme-nobody'])).stderr).toBe(
      'error: No client sa-acme-nobody exists. (Clients.NotFound)\n',
    );
    const other = jsonOf(await idt(env, serviceAccountArgs('Scoped', '--json')));
    const admin = await database.db('identity_users').where({ email: 'ada@example.com' }).first('id');
    await server.idt.services.identity.accounts.organizations.create(
      { userId: admin.id, organizationId: null, permissions: new Set() },
      { name: 'Initech' },
    );
    const elsewhere = await idt(env, ['rotate-secret', other.client.clientId, '--org', 'initech']);
    expect(elsewhere.exitCode).toBe(1);
    expect(elsewhere.stderr).toBe(
      `error: No client ${other.client.clientId} exists in the organization Initech (initech). (Clients.NotFound)\n`,
    );
    expect((await tokenRequest(server, other.client.clientId, other.clientSecret, 'users.read')).status).toBe(200);
  });

  it.skipIf(dialect !== 'postgres')(
    'evicts a running server’s cached client at once when the CLI rotates on Postgres',
    async () => {
      const registered = jsonOf(await idt(env, serviceAccountArgs('Cached', '--json')));
      const clientId = registered.client.clientId as string;
      expect((await tokenRequest(server, clientId, registered.clientSecret, 'users.read')).status).toBe(200);
      expect((await idt(env, ['rotate-secret', clientId])).exitCode).toBe(0);
      // NOTIFY reaches the server's listener asynchronously, right after the rotation commits.
      await expect
        .poll(async () => (await tokenRequest(server, clientId, registered.clientSecret, 'users.read')).status, { timeout: 2000 })
        .toBe(401);
    },
  );

  it('creates missing directories for an env file; --env-file and --env-out must agree', async () => {
    const nested = join(dir, 'nested', dialect, 'sa.env');
    const result = await idt(env, serviceAccountArgs('Nested', '--env-file', nested));
    expect(result.exitCode).toBe(0);
    expect(existsSync(nested)).toBe(true);
    const conflicting = await idt(env, ['rotate-secret', 'sa-acme-nested', '--env-file', 'a.env', '--env-out', 'b.env']);
    expect(conflicting.exitCode).toBe(2);
  });
});
