import { createIdt, type Idt } from '@idt/core';
import { coreMigrations } from '@idt/core/knex';
import { identity } from '@idt/identity';
import { identityMigrations } from '@idt/identity/knex';
import { oidc } from '@idt/oidc';
import { oidcMigrations } from '@idt/oidc/knex';
import { createTestDatabase, mintAccessToken, registerFlowClient, runSignInFlow, type TestDatabase } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

describe('createIdt(...).fetch with no node:http server', () => {
  let database: TestDatabase;
  let idt: Idt<readonly [ReturnType<typeof identity>, ReturnType<typeof oidc>]>;
  const baseUrl = 'https://id.example.test/auth';

  beforeAll(async () => {
    database = await createTestDatabase('sqlite', [coreMigrations, identityMigrations, oidcMigrations]);
    idt = await createIdt({
      database: database.db,
      baseUrl,
      env: { IDT_ENVIRONMENT: 'Testing', IDT_LOG_LEVEL: 'silent', IDT_DATA_DIR: database.dataDir },
      modules: [identity(), oidc()],
    });
  });
  afterAll(async () => {
    await idt?.close();
    await database?.destroy();
  });

  it('runs discovery, sign-in, code + PKCE, userinfo, an API call, refresh and logout on Request objects', async () => {
    const inProcess = ((input: string | URL | Request, init?: RequestInit) =>
      idt.fetch(new Request(input, init))) as typeof fetch;
    const result = await runSignInFlow({
      baseUrl,
      fetch: inProcess,
      registerClient: (...args) => registerFlowClient(idt, 'Fetch host', ...args),
    });
    expect(result.issuer).toBe(baseUrl);
    // Modules that are not composed are not there.
    const storage = await idt.fetch(
      new Request(`${baseUrl}/v1/storage/buckets`, { headers: { authorization: `Bearer ${result.accessToken}` } }),
    );
    expect(storage.status).toBe(404);
    // Nothing here mails e-mail change confirmations (that is @idt/notifications): a change is refused, not lost.
    const token = await mintAccessToken({ idt, database }, { sub: result.userId, org_id: result.organizationId });
    const change = await idt.fetch(
      new Request(`${baseUrl}/v1/identity/auth/change-email`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ newEmail: 'elsewhere@example.com' }),
      }),
    );
    expect(change.status).toBe(503);
    expect(change.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(await change.json()).toMatchObject({ status: 503, code: 'EmailChange.Unavailable' });
    expect(await database.db('identity_email_changes').count({ n: '*' }).first()).toMatchObject({ n: 0 });
  });
});
