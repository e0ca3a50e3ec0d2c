import {
  bootstrapAdmin,
  createTestIdt,
  discover,
  oidcClient,
  redeemCode,
  registerClient,
  signIn,
  type TestIdt,
} from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

describe('authorization code flow (smoke)', () => {
  let server: TestIdt;
  beforeAll(async () => {
    server = await createTestIdt({ env: { IDT_BACKCHANNEL_ALLOW_PRIVATE_HOSTS: 'true' } });
  });
  afterAll(async () => {
    await server?.close();
  });

  it('signs in, exchanges the code, calls userinfo, refreshes', async () => {
    const admin = await bootstrapAdmin(server);
    const redirectUri = 'http://127.0.0.1:9/callback';
    const client = await registerClient(server, await admin.token(), admin.organizationId, {
      kind: 'application',
      name: 'Dashboard',
      redirectUris: [redirectUri],
      postLogoutRedirectUris: ['http://127.0.0.1:9/signed-out'],
      scopes: ['openid', 'profile', 'email', 'roles', 'offline_access', 'users.read'],
    });
    const config = await discover(server, client);
    const result = await signIn(config, {
      redirectUri,
      scope: 'openid profile email roles offline_access users.read',
      email: admin.email,
      password: admin.password,
    });
    expect(result.callback.searchParams.get('code')).toBeTruthy();
    const tokens = await redeemCode(config, result);
    const idClaims = tokens.claims();
    expect(idClaims?.sid).toBeTruthy();
    expect(tokens.refresh_token).toBeTruthy();
    const payload = JSON.parse(Buffer.from(tokens.access_token.split('.')[1] ?? '', 'base64url').toString());
    expect(payload).toMatchObject({ sub: admin.userId, org_id: admin.organizationId, azp: client.clientId, sid: idClaims?.sid });
    const me = await server.fetch('/v1/identity/users/me', { headers: { authorization: `Bearer ${tokens.access_token}` } });
    expect(me.status).toBe(200);
    const userinfo = await oidcClient.fetchUserInfo(config, tokens.access_token, admin.userId);
    expect(userinfo).toMatchObject({ sub: admin.userId, email: admin.email, org_id: admin.organizationId, roles: ['owner'] });
    const refreshed = await oidcClient.refreshTokenGrant(config, tokens.refresh_token ?? '');
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);
  });
});
