import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Prompter } from '@idt/cli';
import {
  bearer,
  discover,
  mintAccessToken,
  redeemCode,
  refreshTokenRequest,
  registerClient,
  seedUser,
  signIn,
  type TestDatabase,
  type TestServer,
  testDialects,
} from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type CliFixture,
  decodeJwt,
  idt,
  jsonOf,
  nextSecond,
  PASSWORD,
  readEnvFile,
  serviceAccountArgs,
  startCliFixture,
  tokenRequest,
  writeOperatorSeed,
} from './support.js';

const REDIRECT = 'http://127.0.0.1:9/callback';

/** A prompter that answers a confirmation and records it. */
function confirming(answer: boolean): Prompter & { asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    input: async () => {
      throw new Error('no input expected');
    },
    password: async () => {
      throw new Error('no password expected');
    },
    confirm: async (message) => {
      asked.push(message);
      return answer;
    },
  };
}

describe.each(testDialects())('operator commands on %s', (dialect) => {
  let fixture: CliFixture;
  let database: TestDatabase;
  let server: TestServer;
  let dir: string;
  let env: Record<string, string>;
  let acmeId: string;

  beforeAll(async () => {
    fixture = await startCliFixture(dialect, 'idt-operator-');
    ({ dir, database, server, env } = fixture);
    const seed = writeOperatorSeed(dir);
    expect((await idt(env, ['seed', '--file', seed])).exitCode).toBe(0);
    const registered = await idt(env, serviceAccountArgs('Reporting', '--env-out', join(dir, 'sa.env')));
    expect(registered.exitCode).toBe(0);
    acmeId = (await server.idt.services.identity.accounts.operator.findOrganization('acme'))?.id ?? '';
  });
  afterAll(() => fixture.close());

  it('lists organizations with their ids, and users with their organization ids, never a hash', async () => {
    const orgs = await idt(env, ['orgs', 'list']);
    expect(orgs.exitCode).toBe(0);
    expect(orgs.stdout).toMatch(new RegExp(`^${acmeId}  acme +active +invitation_only +1 +Acme \\(platform\\)$`, 'm'));
    const orgsJson = jsonOf(await idt(env, ['orgs', 'list', '--json']));
    expect(orgsJson.organizations.map((org: { slug: string }) => org.slug)).toEqual(['acme', 'globex']);
    expect(orgsJson.organizations[1]).toMatchObject({ members: 2, isPlatform: false, enrollmentPolicy: 'invitation_only' });

    const users = await idt(env, ['users', 'list', '--json']);
    expect(users.exitCode).toBe(0);
    const list = jsonOf(users).users;
    expect(list.map((user: { email: string }) => user.email)).toEqual(['ada@example.com', 'bob@example.com']);
    expect(list[0].organizationIds).toContain(acmeId);
    expect(users.stdout).not.toMatch(/argon2|password/i);

    const members = await idt(env, ['users', 'list', '--org', 'globex']);
    expect(members.stdout).toMatch(/bob@example\.com +active +admin +Bob Builder/);
    const unknown = await idt(env, ['users', 'list', '--org', 'hooli']);
    expect(unknown.exitCode).toBe(1);
    expect(unknown.stderr).toBe('error: No organization "hooli" (id, slug or name). (Identity.OrganizationNotFound)\n');
  });

  it('lists, shows and deletes clients; delete asks on a terminal and needs --yes in scripts', async () => {
    const list = await idt(env, ['clients', 'list']);
    expect(list.stdout).toMatch(new RegExp(`^sa-acme-reporting +service-account +active +${acmeId} +Reporting$`, 'm'));
    expect(jsonOf(await idt(env, ['clients', 'list', '--org', 'globex', '--json']))).toEqual({ ok: true, clients: [] });
    const shown = jsonOf(await idt(env, ['clients', 'show', 'sa-acme-reporting', '--json']));
    expect(shown.client).toMatchObject({ clientId: 'sa-acme-reporting', organizationId: acmeId, scopes: ['users.read'] });
    expect(JSON.stringify(shown)).not.toMatch(/secret/i);
    const missing = await idt(env, ['clients', 'show', 'nope']);
    expect(missing.exitCode).toBe(1);
    expect(missing.stderr).toMatch(/\(Clients\.NotFound\)\n$/);

    const scripted = await idt(env, ['clients', 'delete', 'sa-acme-reporting']);
    expect(scripted.exitCode).toBe(2);
    expect(scripted.stderr).toContain('--yes');
    const declined = confirming(false);
    const kept = await idt(env, ['clients', 'delete', 'sa-acme-reporting'], { prompter: declined });
    expect(kept.exitCode).toBe(0);
    expect(declined.asked).toEqual(['Delete the service account sa-acme-reporting (Reporting)? Its tokens stop working.']);
    expect(await server.idt.services.oidc.clients.findStored('sa-acme-reporting')).toBeDefined();

    await idt(env, serviceAccountArgs('Doomed'));
    const deleted = await idt(env, ['clients', 'delete', 'sa-acme-doomed', '--yes', '--json']);
    expect(jsonOf(deleted)).toEqual({ ok: true, deleted: true, clientId: 'sa-acme-doomed' });
    expect(await server.idt.services.oidc.clients.findStored('sa-acme-doomed')).toBeUndefined();
    expect((await idt(env, ['clients', 'delete', 'sa-acme-doomed', '--yes'])).exitCode).toBe(1);
  });

  it('prints a client-credentials token from an env file or the environment, and explains refusals', async () => {
    const file = join(dir, 'sa.env');
    const token = await idt(env, ['token', '--from', file]);
    expect(token.stderr).toBe('');
    expect(token.exitCode).toBe(0);
    expect(token.stdout).toMatch(/^\S+\n$/);
    expect(decodeJwt(token.stdout.trim())).toMatchObject({ sub: 'sa-acme-reporting', org_id: acmeId, scope: 'users.read' });
    const json = jsonOf(await idt({ ...env, ...readEnvFile(file) }, ['token', '--json']));
    expect(json).toMatchObject({ ok: true, accessToken: expect.any(String), tokenType: 'Bearer', scope: 'users.read' });
    expect((await idt(env, ['token', '--env-file', file])).exitCode).toBe(0);

    const noVariables = await idt({}, ['token']);
    expect(noVariables.exitCode).toBe(1);
    expect(noVariables.stderr).toMatch(
      /^error: OIDC_ISSUER, OIDC_SERVICE_CLIENT_ID, OIDC_SERVICE_CLIENT_SECRET are not set in the environment\. \(Config\.Invalid\)\n {2}.*--from/,
    );
    const wrong = join(dir, 'wrong.env');
    writeFileSync(
      wrong,
      `${Object.entries({ ...readEnvFile(file), OIDC_SERVICE_CLIENT_SECRET: 'not-the-secret' })
        .map(([k, v]) => `${k}="${v}"`)
        .join('\n')}\n`,
    );
    const refused = await idt(env, ['token', '--from', wrong]);
    expect(refused.exitCode).toBe(1);
    expect(refused.stderr).toMatch(
      /^error: The token endpoint refused the request \(HTTP 401, invalid_client.*\(Token\.Refused\)\n/,
    );
    expect(refused.stderr).toContain('OIDC_SERVICE_CLIENT_SECRET');
    const down = join(dir, 'down.env');
    writeFileSync(
      down,
      `${Object.entries({ ...readEnvFile(file), OIDC_ISSUER: 'http://127.0.0.1:1' })
        .map(([k, v]) => `${k}="${v}"`)
        .join('\n')}\n`,
    );
    expect((await idt(env, ['token', '--from', down])).stderr).toMatch(/\(Token\.IssuerUnreachable\)\n {2}Check OIDC_ISSUER/);
  });

  it('sets a password from standard input with the identity policy; a refused one changes nothing', async () => {
    const before = await database.db('identity_users').where({ email: 'bob@example.com' }).first('password_hash');
    const short = await idt(env, ['users', 'reset-password', 'bob@example.com', '--password-stdin'], { stdin: 'short\n' });
    expect(short.exitCode).toBe(1);
    expect(short.stderr).toBe(
      'error: The password read from standard input is refused. (Validation.Failed)\n  password: A password has at least 12 characters.\n',
    );
    expect(await database.db('identity_users').where({ email: 'bob@example.com' }).first('password_hash')).toEqual(before);
    const unknown = await idt(env, ['users', 'reset-password', 'nobody@example.com', '--password-stdin'], {
      stdin: `${PASSWORD}\n`,
    });
    expect(unknown.exitCode).toBe(1);
    expect(unknown.stderr).toContain('(Identity.UserNotFound)');
    expect((await idt(env, ['users', 'reset-password', 'bob@example.com'])).exitCode).toBe(2);

    const reset = await idt(env, ['users', 'reset-password', 'Bob@Example.com', '--password-stdin', '--json'], {
      stdin: 'a brand new passphrase\n',
    });
    expect(reset.exitCode).toBe(0);
    expect(jsonOf(reset)).toMatchObject({ ok: true, email: 'bob@example.com' });
    const { signIn } = server.idt.services.identity;
    expect(await signIn.authenticate('bob@example.com', 'a brand new passphrase')).toEqual(expect.any(String));
    expect(await signIn.authenticate('bob@example.com', PASSWORD).catch(() => undefined)).toBeFalsy();
    // The service account still works after all of this.
    const variables = readEnvFile(join(dir, 'sa.env'));
    expect(
      (
        await tokenRequest(
          server,
          variables.OIDC_SERVICE_CLIENT_ID ?? '',
          variables.OIDC_SERVICE_CLIENT_SECRET ?? '',
          'users.read',
        )
      ).status,
    ).toBe(200);
  });

  it('signs the user out everywhere: sessions, access and refresh tokens end, and the event brings the notice', async () => {
    const bob = await server.idt.services.identity.accounts.operator.findUserByEmail('bob@example.com');
    if (!bob) throw new Error('bob is missing');
    await nextSecond(); // the reset above refused every token of Bob issued until then
    const globex = await server.idt.services.identity.accounts.operator.findOrganization('globex');
    // Bob signs in to an application of Globex: a refresh token, and a session of the identity module.
    const client = await registerClient(
      server,
      await mintAccessToken(server, { sub: bob.id, org_id: globex?.id }),
      globex?.id ?? '',
      {
        kind: 'application',
        name: 'Globex portal',
        redirectUris: [REDIRECT],
        scopes: ['openid', 'offline_access'],
      },
    );
    const config = await discover(server, client);
    const signedIn = await signIn(config, {
      redirectUri: REDIRECT,
      scope: 'openid offline_access',
      email: 'bob@example.com',
      password: 'a brand new passphrase',
    });
    const refreshToken = (await redeemCode(config, signedIn)).refresh_token as string;
    expect(refreshToken).toBeTruthy();
    const { sessions } = server.idt.services.identity.credentials;
    const started = await sessions.start(bob.id, { amr: ['pwd'] });
    const token = await mintAccessToken(server, { sub: bob.id, sid: started.session.id });
    expect((await server.fetch('/v1/identity/sessions', { headers: bearer(token) })).status).toBe(200);
    const events = () => database.db('core_outbox_events').where({ type: 'UserPasswordResetEvent' });
    const before = (await events()).length;

    const reset = await idt(env, ['users', 'reset-password', 'bob@example.com', '--password-stdin'], {
      stdin: 'another brand new passphrase\n',
    });
    expect(reset.exitCode).toBe(0);
    expect(reset.stdout).toBe(
      'Set a new password for bob@example.com; the old one no longer works and every session of the user was signed out.\n',
    );
    expect(await sessions.list(bob.id)).toEqual([]);
    const published = (await events()).map((event) => JSON.parse(event.payload));
    expect(published.length).toBe(before + 1);
    expect(published.at(-1)).toEqual({ userId: bob.id, email: 'bob@example.com', resetAt: expect.any(String), by: 'operator' });
    // The server's caches hear of it from the database (NOTIFY on PostgreSQL, a poll each second on SQLite);
    // the event's handlers may run in the CLI or in the server: real I/O either way, so poll.
    await eventually(async () => {
      expect((await server.fetch('/v1/identity/sessions', { headers: bearer(token) })).status).toBe(401);
      expect((await refreshTokenRequest(server, client, refreshToken)).status).toBe(400);
      const alerts = await database.db('notifications').where({ user_id: bob.id, type: 'SecurityAlert' });
      expect(alerts.map((alert) => alert.title)).toContain('Your password was reset');
    });

    // A deactivated user is refused; nothing changes.
    const gone = await seedUser(database.db, { status: 'deactivated' });
    const refused = await idt(env, ['users', 'reset-password', gone.email, '--password-stdin'], {
      stdin: 'another brand new passphrase\n',
    });
    expect(refused.exitCode).toBe(1);
    expect(refused.stderr).toMatch(/is deactivated; reactivate the user first\. \(Identity\.UserAlreadyDeactivated\)\n$/);
    expect((await database.db('identity_users').where({ id: gone.id }).first()).password_hash).toBeNull();
    expect((await events()).length).toBe(before + 1);
  });
});

/** Retries `check` (up to 5 s) until it passes: for effects another process or a poll delivers. */
async function eventually(check: () => Promise<void>): Promise<void> {
  const deadline = Date.now() + 5000;
  for (;;) {
    try {
      return await check();
    } catch (error) {
      if (Date.now() > deadline) throw error;
      // Real I/O: the next look, after the other process or the poll had a chance to run.
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}
