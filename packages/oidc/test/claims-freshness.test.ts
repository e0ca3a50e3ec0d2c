import {
  bootstrapAdmin,
  caller,
  createTestIdt,
  discover,
  expectJson,
  oidcClient,
  redeemCode,
  registerClient,
  signIn,
  type TestAdmin,
  type TestIdt,
  testDialects,
} from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const REDIRECT = 'http://127.0.0.1:9/callback';

function decode(token: string): Record<string, unknown> {
  return JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString('utf8'));
}

/**
 * Token claims come from lookups kept in memory between requests: a refresh
 * right after a change must carry the change, never the remembered value.
 */
describe.each(testDialects())('claims of refreshed tokens on %s', (dialect) => {
  let server: TestIdt;
  let admin: TestAdmin;
  beforeAll(async () => {
    server = await createTestIdt({ dialect });
    admin = await bootstrapAdmin(server);
  });
  afterAll(async () => {
    await server?.close();
  });

  it('carry the name, organization name and roles as they are at the refresh', async () => {
    const client = await registerClient(server, await admin.token(), admin.organizationId, {
      kind: 'application',
      name: 'Fresh claims',
      redirectUris: [REDIRECT],
      scopes: ['openid', 'profile', 'roles', 'offline_access', 'users.read'],
    });
    const config = await discover(server, client);
    const result = await signIn(config, {
      redirectUri: REDIRECT,
      scope: 'openid profile roles offline_access users.read',
      email: admin.email,
      password: admin.password,
    });
    const first = await redeemCode(config, result);
    const before = await oidcClient.refreshTokenGrant(config, first.refresh_token ?? '');
    expect(decode(before.access_token)).toMatchObject({ org_id: admin.organizationId });
    expect(before.claims()).toMatchObject({ org_id: admin.organizationId, roles: ['owner'], given_name: expect.any(String) });
    expect(before.claims()?.given_name).not.toBe('Renamed');

    const call = caller(server);
    const token = await admin.token();
    await expectJson(await call('PATCH', '/v1/identity/users/me', { token, body: { firstName: 'Renamed' } }));
    await expectJson(
      await call('PATCH', `/v1/identity/organizations/${admin.organizationId}`, { token, body: { name: 'Renamed Org' } }),
    );
    const after = await oidcClient.refreshTokenGrant(config, before.refresh_token ?? '');
    expect(after.claims()).toMatchObject({ given_name: 'Renamed', org_name: 'Renamed Org', roles: ['owner'] });
  });
});
