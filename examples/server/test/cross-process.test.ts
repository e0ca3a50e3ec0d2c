import { testDialects } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type CliFixture,
  PASSWORD,
  SETUP_ARGS,
  spawnIdt,
  startCliFixture,
  tokenRequest,
} from '../../../packages/cli/test/support.js';

/** The one JSON document a spawned `--json` run printed. */
function jsonOut(run: { exitCode: number | null; stdout: string; stderr: string }): Record<string, any> {
  expect(run.exitCode, run.stderr).toBe(0);
  return JSON.parse(run.stdout) as Record<string, any>;
}

// The CLI runs as a real separate process on the server's database; each assertion is the very next
// request after it exits: no waiting, no retry.
describe.each(testDialects())('changes made by another process on %s', (dialect) => {
  let fixture: CliFixture;

  beforeAll(async () => {
    fixture = await startCliFixture(dialect, 'idt-cross-process-');
  });
  afterAll(() => fixture.close());

  it('`idt setup` lifts the setup gate on the next request', async () => {
    const { server, env } = fixture;
    // Asked twice, so anything that caches "setup required" would have cached it.
    for (let i = 0; i < 2; i++) {
      expect(await (await server.fetch('/v1/identity/setup/status')).json()).toEqual({ setupRequired: true });
      expect((await server.fetch('/v1/identity/users')).status).toBe(503);
    }

    const setup = await spawnIdt([...SETUP_ARGS], { env, stdin: `${PASSWORD}\n` });
    expect(setup.exitCode, setup.stderr).toBe(0);

    expect((await server.fetch('/v1/identity/users')).status).toBe(401);
    expect(await (await server.fetch('/v1/identity/setup/status')).json()).toEqual({ setupRequired: false });
  });

  it('`idt rotate-secret` ends the old secret and admits the new one on the next token request', async () => {
    const { server, env } = fixture;
    // Registered in the server's own process, so no eviction from another process is pending when the
    // token requests below put the client (with its old secret) in the server's cache.
    const organization = await fixture.database.db('identity_organizations').where({ slug: 'acme' }).first('id');
    const { client, clientSecret: oldSecret } = await server.idt.services.oidc.clients.register(
      { userId: null, platformAdmin: true },
      organization.id,
      { kind: 'service-account', name: 'Rotating', scopes: ['users.read'] },
    );
    const clientId = client.clientId;
    // The server has the client cached with its old secret.
    expect((await tokenRequest(server, clientId, oldSecret, 'users.read')).status).toBe(200);
    expect((await tokenRequest(server, clientId, oldSecret, 'users.read')).status).toBe(200);

    const rotated = jsonOut(await spawnIdt(['rotate-secret', clientId, '--json'], { env }));
    const newSecret = rotated.clientSecret as string;
    expect(newSecret).not.toBe(oldSecret);

    expect(await tokenRequest(server, clientId, oldSecret, 'users.read')).toMatchObject({
      status: 401,
      body: { error: 'invalid_client' },
    });
    expect((await tokenRequest(server, clientId, newSecret, 'users.read')).status).toBe(200);
  });
});
