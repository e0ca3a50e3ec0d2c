import { createTestIdt, type TestIdt, testDialects } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { caller, expectJson, seedWorld, type World } from './helpers.js';

describe.each(testDialects())('webhook endpoint secrets at rest on %s', (dialect) => {
  let server: TestIdt;
  let call: ReturnType<typeof caller>;
  let world: World;

  beforeAll(async () => {
    server = await createTestIdt({ dialect, moduleOptions: { platform: { webhooks: { allowPrivateHosts: true } } } });
    call = caller(server);
    world = await seedWorld(server);
  });
  afterAll(async () => {
    await server.close();
  });

  it('stores the signing secret and the rotated-out one sealed, never as written', async () => {
    const created = await expectJson(
      await call('POST', '/v1/webhooks/endpoints', { token: world.platformToken, body: { url: 'http://127.0.0.1:9/hooks' } }),
      201,
    );
    const row = await server.database.db('platform_webhook_endpoints').where({ id: created.endpoint.id }).first();
    expect(row.secret).toMatch(/^v1\./);
    expect(row.secret).not.toContain(created.secret.slice('whsec_'.length));

    const rotated = await expectJson(
      await call('POST', `/v1/webhooks/endpoints/${created.endpoint.id}/rotate-secret`, { token: world.platformToken, body: {} }),
    );
    const after = await server.database.db('platform_webhook_endpoints').where({ id: created.endpoint.id }).first();
    const dump = JSON.stringify(after);
    for (const secret of [created.secret, rotated.secret]) expect(dump).not.toContain(secret.slice('whsec_'.length));
    expect(after.previous_secret).toMatch(/^v1\./);
    // Still usable: the endpoint reads back and its test message is queued.
    await expectJson(
      await call('POST', `/v1/webhooks/endpoints/${created.endpoint.id}/test`, { token: world.platformToken }),
      202,
    );
  });
});
