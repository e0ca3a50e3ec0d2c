import { createIdt, type Idt } from '@idt/core';
import { coreMigrations } from '@idt/core/knex';
import { identity } from '@idt/identity';
import { identityMigrations } from '@idt/identity/knex';
import { oidc } from '@idt/oidc';
import { oidcMigrations } from '@idt/oidc/knex';
import { createTestDatabase, registerFlowClient, runSignInFlow, type TestDatabase } from '@idt/testing';
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
  });
});
