import { coreMigrations, runMigrations } from '@idt/core/knex';
import { identityMigrations } from '@idt/identity/knex';
import { createTestDatabase, indexDefinitions, type TestDatabase, testDialects } from '@idt/testing';
import { afterEach, describe, expect, it } from 'vitest';
import { oidcMigrations } from '../src/knex.js';

/**
 * `@idt/oidc`'s migrations met on a database that holds rows already: what
 * an upgrade keeps, and what it takes off.
 */
describe.each(testDialects())("@idt/oidc's migrations on %s", (dialect) => {
  let database: TestDatabase | undefined;
  afterEach(async () => {
    await database?.destroy();
    database = undefined;
  });

  it("keeps the sessions' ids and drops the copies codes and tokens held, indexed where set", async () => {
    database = await createTestDatabase(dialect, [coreMigrations, identityMigrations]);
    const { db } = database;
    const upTo = (name: string) => ({
      ...oidcMigrations,
      migrations: oidcMigrations.migrations.slice(
        0,
        oidcMigrations.migrations.findIndex((m) => m.name === name),
      ),
    });
    await runMigrations(db, [coreMigrations, identityMigrations, upTo('0005_payload_session_id_set_index')]);
    const row = (model: string, id: string, sessionId: string) => ({ model, id, payload: '{}', session_id: sessionId });
    await db('oidc_payloads').insert([
      row('Session', 'session-1', 'sid-1'),
      row('RefreshToken', 'token-1', 'sid-1'),
      row('AuthorizationCode', 'code-1', 'sid-1'),
      row('Grant', 'grant-1', 'sid-1'),
    ]);

    const upgrade = await runMigrations(db, [coreMigrations, identityMigrations, oidcMigrations]);
    expect(upgrade.flatMap((set) => set.applied)).toEqual(['0005_payload_session_id_set_index']);
    const rows = await db('oidc_payloads').select('model', 'session_id').orderBy('model');
    expect(rows).toEqual([
      { model: 'AuthorizationCode', session_id: null },
      { model: 'Grant', session_id: null },
      { model: 'RefreshToken', session_id: null },
      { model: 'Session', session_id: 'sid-1' },
    ]);
    const indexes = await indexDefinitions(db);
    expect(indexes.get('oidc_payloads_session_id_set_index')).toMatch(/\(session_id\) where \(?session_id is not null\)?$/i);
    expect(indexes.has('oidc_payloads_session_index')).toBe(false);
  });
});
