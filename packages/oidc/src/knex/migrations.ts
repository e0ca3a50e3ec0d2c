import type { Migration, MigrationSet } from '@idt/core/knex';
import { timestampColumn } from '@idt/core/knex';
import { SCOPE_CATALOG } from '@idt/identity';

const provider: Migration = {
  name: '0001_provider',
  async up(db) {
    await db.schema.createTable('oidc_scopes', (t) => {
      t.string('scope', 100).primary();
      t.string('description', 500).notNullable();
      t.boolean('is_default').notNullable().defaultTo(false);
      t.boolean('platform_only').notNullable().defaultTo(false);
      timestampColumn(t, 'created_at').notNullable();
    });
    const now = new Date().toISOString();
    await db('oidc_scopes').insert(
      SCOPE_CATALOG.map((entry) => ({
        scope: entry.scope,
        description: entry.description,
        is_default: entry.default,
        platform_only: entry.platformOnly,
        created_at: now,
      })),
    );

    await db.schema.createTable('oidc_clients', (t) => {
      t.string('client_id', 200).primary();
      t.string('organization_id', 36).references('id').inTable('identity_organizations').onDelete('CASCADE');
      t.string('kind', 32).notNullable();
      t.string('name', 200).notNullable();
      t.string('status', 16).notNullable().defaultTo('active');
      t.boolean('first_party').notNullable().defaultTo(false);
      t.text('redirect_uris').notNullable().defaultTo('[]');
      t.text('post_logout_redirect_uris').notNullable().defaultTo('[]');
      t.text('backchannel_logout_uri');
      t.boolean('backchannel_logout_session_required').notNullable().defaultTo(false);
      t.text('frontchannel_logout_uri');
      t.text('scopes').notNullable();
      t.integer('refresh_token_lifetime');
      t.string('secret_hash', 128).notNullable();
      t.string('created_by_user_id', 36);
      timestampColumn(t, 'created_at').notNullable();
      timestampColumn(t, 'updated_at').notNullable();
      timestampColumn(t, 'last_used_at');
      timestampColumn(t, 'last_rotated_at');
      t.string('last_rotated_by_user_id', 36);
      t.string('display_name', 200);
      t.string('tagline', 500);
      t.text('theme_json');
      t.binary('logo');
      t.string('logo_content_type', 32);
      t.index(['organization_id']);
    });

    await db.schema.createTable('oidc_payloads', (t) => {
      t.string('model', 40).notNullable();
      t.string('id', 200).notNullable();
      t.text('payload').notNullable();
      t.string('grant_id', 200);
      t.string('uid', 200);
      t.string('user_code', 200);
      t.string('account_id', 200);
      t.string('client_id', 200);
      t.string('session_id', 64);
      timestampColumn(t, 'expires_at');
      timestampColumn(t, 'consumed_at');
      t.primary(['model', 'id']);
      t.index(['grant_id']);
      t.index(['uid']);
      t.index(['session_id']);
      t.index(['account_id']);
      t.index(['client_id']);
      t.index(['expires_at']);
    });

    await db.schema.createTable('oidc_grant_contexts', (t) => {
      t.string('grant_id', 200).primary();
      t.string('organization_id', 36);
      t.integer('refresh_token_lifetime').notNullable();
      timestampColumn(t, 'created_at').notNullable();
      timestampColumn(t, 'expires_at').notNullable();
      t.index(['expires_at']);
    });

    await db.schema.createTable('oidc_consents', (t) => {
      t.string('user_id', 36).notNullable().references('id').inTable('identity_users').onDelete('CASCADE');
      t.string('client_id', 200).notNullable().references('client_id').inTable('oidc_clients').onDelete('CASCADE');
      t.text('scopes').notNullable();
      timestampColumn(t, 'created_at').notNullable();
      timestampColumn(t, 'updated_at').notNullable();
      t.primary(['user_id', 'client_id']);
    });

    await db.schema.createTable('oidc_client_auth_failures', (t) => {
      t.string('client_id', 200).primary();
      t.bigInteger('total').notNullable().defaultTo(0);
      timestampColumn(t, 'last_failure_at').notNullable();
      timestampColumn(t, 'locked_until');
    });
  },
  async down(db) {
    for (const table of [
      'oidc_client_auth_failures',
      'oidc_consents',
      'oidc_grant_contexts',
      'oidc_payloads',
      'oidc_clients',
      'oidc_scopes',
    ]) {
      await db.schema.dropTableIfExists(table);
    }
  },
};

/**
 * Client lists in the order they are shown (`created_at`, then `client_id`),
 * all clients for platform administrators and an organization's clients for
 * its members, read from an index rather than sorted.
 */
const clientListIndexes: Migration = {
  name: '0002_client_list_indexes',
  async up(db) {
    await db.schema.alterTable('oidc_clients', (t) => {
      t.index(['created_at', 'client_id'], 'oidc_clients_created_index');
      t.index(['organization_id', 'created_at', 'client_id'], 'oidc_clients_org_created_index');
    });
  },
  async down(db) {
    await db.schema.alterTable('oidc_clients', (t) => {
      t.dropIndex(['created_at', 'client_id'], 'oidc_clients_created_index');
      t.dropIndex(['organization_id', 'created_at', 'client_id'], 'oidc_clients_org_created_index');
    });
  },
};

/**
 * Two of the payload table's indexes, kept only for the rows that are looked
 * up through them: `uid` for the rows that have one (sessions and
 * interactions, read by `findByUid`), `session_id` for the provider's
 * sessions (read by session id at logout and session eviction). Codes,
 * grants and refresh tokens carry a session id but are never found by it,
 * and have no `uid`; without these two entries each of their inserts writes
 * two index pages fewer, which is a fifth of the pages a refresh grant's
 * successor token writes.
 */
const payloadPartialIndexes: Migration = {
  name: '0003_payload_partial_indexes',
  async up(db) {
    await db.schema.alterTable('oidc_payloads', (t) => {
      t.dropIndex(['uid']);
      t.dropIndex(['session_id']);
    });
    await db.raw('create index oidc_payloads_uid_index on oidc_payloads (uid) where uid is not null');
    await db.raw("create index oidc_payloads_session_index on oidc_payloads (session_id) where model = 'Session'");
  },
  async down(db) {
    await db.raw('drop index oidc_payloads_session_index');
    await db.raw('drop index oidc_payloads_uid_index');
    await db.schema.alterTable('oidc_payloads', (t) => {
      t.index(['uid']);
      t.index(['session_id']);
    });
  },
};

/** The payload columns {@link payloadSetColumnIndexes} indexes where set. */
const PAYLOAD_LOOKUP_COLUMNS = ['grant_id', 'account_id', 'client_id'] as const;

/**
 * The payload table's remaining lookup columns indexed only where they are
 * set: `grant_id` (a grant's codes and tokens, revoked together),
 * `account_id` (a user's sessions and grants) and `client_id` (a client's
 * grants, deleted with their codes and tokens when its secret rotates; the
 * adapter fills these two only for the rows looked up by them). Every
 * lookup through them compares the column with a value, which implies
 * `is not null`, so both engines use the partial index. Interactions,
 * sessions and replay records lack some of these columns; without an entry
 * for a null, each of their writes touches fewer index pages (a sign-in
 * writes and deletes several).
 */
const payloadSetColumnIndexes: Migration = {
  name: '0004_payload_set_column_indexes',
  async up(db) {
    await db.schema.alterTable('oidc_payloads', (t) => {
      for (const column of PAYLOAD_LOOKUP_COLUMNS) t.dropIndex([column]);
    });
    for (const column of PAYLOAD_LOOKUP_COLUMNS) {
      await db.raw(`create index oidc_payloads_${column}_set_index on oidc_payloads (${column}) where ${column} is not null`);
    }
  },
  async down(db) {
    for (const column of PAYLOAD_LOOKUP_COLUMNS) await db.raw(`drop index oidc_payloads_${column}_set_index`);
    await db.schema.alterTable('oidc_payloads', (t) => {
      for (const column of PAYLOAD_LOOKUP_COLUMNS) t.index([column]);
    });
  },
};

/**
 * The index of the provider's sessions by session id, kept where
 * `session_id` is set (the adapter now fills it for sessions only), instead
 * of where `model = 'Session'`.
 *
 * A partial index whose condition compares a column with a constant makes
 * SQLite plan anew, at every run, each prepared statement that binds a
 * value to that column and goes through the full query planner: to know
 * whether the index may be used, the planner compares the bound value with
 * the constant, and marks the statement to be prepared again whenever that
 * value is bound. Every statement of the payload table binds `model`: the
 * read of a code or refresh token with its grant (a join) and the read of
 * an interaction or session by `uid` were parsed and planned again on every
 * call, 10 to 15 µs each on a fast core, against about 1.5 µs now.
 * `session_id = ?` implies `session_id is not null`, so both engines still
 * find a session by its id through this index. Codes, grants and refresh
 * tokens written before this migration lose their copy of the session id,
 * which nothing looked them up by.
 */
const payloadSessionIdIndex: Migration = {
  name: '0005_payload_session_id_set_index',
  async up(db) {
    await db.raw('drop index oidc_payloads_session_index');
    await db.raw("update oidc_payloads set session_id = null where model <> 'Session' and session_id is not null");
    await db.raw('create index oidc_payloads_session_id_set_index on oidc_payloads (session_id) where session_id is not null');
  },
  async down(db) {
    await db.raw('drop index oidc_payloads_session_id_set_index');
    await db.raw("create index oidc_payloads_session_index on oidc_payloads (session_id) where model = 'Session'");
  },
};

/** The migrations of `@idt/oidc`, recorded in `idt_oidc_migrations`. */
export const oidcMigrations: MigrationSet = {
  owner: '@idt/oidc',
  tableName: 'idt_oidc_migrations',
  dependsOn: ['@idt/core', '@idt/identity'],
  migrations: [provider, clientListIndexes, payloadPartialIndexes, payloadSetColumnIndexes, payloadSessionIdIndex],
};
