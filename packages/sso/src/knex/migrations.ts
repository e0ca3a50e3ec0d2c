import type { Migration, MigrationSet } from '@idt/core/knex';
import { timestampColumn } from '@idt/core/knex';

/** Single sign-on connections. */
export const SSO_CONNECTIONS_TABLE = 'sso_connections';
/** Domains organizations claim and verify. */
export const SSO_DOMAINS_TABLE = 'sso_domains';
/** Identities at connections, keyed by (connection, subject). */
export const SSO_IDENTITIES_TABLE = 'sso_identities';
/** Accepted SAML assertion ids, kept until they expire. */
export const SSO_SAML_REPLAYS_TABLE = 'sso_saml_replays';
/** SAML AuthnRequests waiting for their answer. */
export const SSO_SAML_REQUESTS_TABLE = 'sso_saml_requests';
/** Organizations' single sign-on policy (`ssoRequired`). */
export const SSO_POLICIES_TABLE = 'sso_organization_policies';
/** Sign-ins started at a connection, waiting for the callback or ACS (keyed by a SHA-256 of the state or request id). */
export const SSO_SIGN_IN_TRANSACTIONS_TABLE = 'sso_sign_in_transactions';
/** Outcomes of sign-ins and pending links, behind a handle (keyed by its SHA-256), single use. */
export const SSO_SIGN_IN_OUTCOMES_TABLE = 'sso_sign_in_outcomes';

/**
 * - `sso_connections`: one row per connection, of an organization or (null)
 *   of the platform. `config` is the kind's JSON (issuer, client id and
 *   scopes; or the IdP's entity id, sign-in URL and certificates);
 *   `sealed_secret` the OIDC client secret sealed under the server secret.
 * - `sso_domains`: a domain an organization claims with its TXT token; a
 *   partial unique index keeps a domain verified by one organization only.
 * - `sso_identities`: who a subject of a connection is here.
 * - `sso_saml_replays` / `sso_saml_requests`: the SAML caches, keyed by a
 *   SHA-256 of the scoped id, pruned by a job.
 */
const initial: Migration = {
  name: '0001_sso',
  async up(db) {
    await db.schema.createTable(SSO_CONNECTIONS_TABLE, (t) => {
      t.string('id', 36).primary();
      t.string('organization_id', 36).references('id').inTable('identity_organizations').onDelete('CASCADE');
      t.string('kind', 8).notNullable();
      t.string('name', 200).notNullable();
      t.boolean('enabled').notNullable().defaultTo(false);
      t.text('config').notNullable();
      t.text('sealed_secret');
      t.text('attribute_mapping').notNullable();
      t.text('role_mapping').notNullable();
      t.string('default_role', 64);
      t.boolean('allow_idp_initiated').notNullable().defaultTo(false);
      t.string('default_relay_state', 1024);
      timestampColumn(t, 'created_at').notNullable();
      timestampColumn(t, 'updated_at').notNullable();
      t.index(['organization_id', 'created_at']);
    });
    await db.schema.createTable(SSO_DOMAINS_TABLE, (t) => {
      t.string('id', 36).primary();
      t.string('organization_id', 36).notNullable().references('id').inTable('identity_organizations').onDelete('CASCADE');
      t.string('domain', 253).notNullable();
      t.string('token', 100).notNullable();
      timestampColumn(t, 'verified_at');
      timestampColumn(t, 'created_at').notNullable();
      t.unique(['organization_id', 'domain']);
    });
    // Postgres and SQLite both take a partial index in this form.
    await db.raw(
      `CREATE UNIQUE INDEX sso_domains_verified_domain ON ${SSO_DOMAINS_TABLE} (domain) WHERE verified_at IS NOT NULL`,
    );
    await db.schema.createTable(SSO_IDENTITIES_TABLE, (t) => {
      t.string('connection_id', 36).notNullable().references('id').inTable(SSO_CONNECTIONS_TABLE).onDelete('CASCADE');
      t.string('subject', 512).notNullable();
      t.string('user_id', 36).notNullable().references('id').inTable('identity_users').onDelete('CASCADE');
      t.string('email', 254);
      timestampColumn(t, 'created_at').notNullable();
      timestampColumn(t, 'last_sign_in_at');
      t.primary(['connection_id', 'subject']);
      t.index(['user_id']);
    });
    await db.schema.createTable(SSO_SAML_REPLAYS_TABLE, (t) => {
      t.string('key', 64).primary();
      timestampColumn(t, 'expires_at').notNullable();
      t.index(['expires_at']);
    });
    await db.schema.createTable(SSO_SAML_REQUESTS_TABLE, (t) => {
      t.string('key', 64).primary();
      t.string('relay_state', 1024);
      timestampColumn(t, 'expires_at').notNullable();
      t.index(['expires_at']);
    });
  },
  async down(db) {
    await db.schema.dropTableIfExists(SSO_SAML_REQUESTS_TABLE);
    await db.schema.dropTableIfExists(SSO_SAML_REPLAYS_TABLE);
    await db.schema.dropTableIfExists(SSO_IDENTITIES_TABLE);
    await db.schema.dropTableIfExists(SSO_DOMAINS_TABLE);
    await db.schema.dropTableIfExists(SSO_CONNECTIONS_TABLE);
  },
};

/**
 * The sign-in round trip:
 * - `sso_organization_policies`: `sso_required` per organization (no row: false).
 * - `sso_sign_in_transactions`: a started sign-in, keyed by the SHA-256 of
 *   its OIDC state or of its scoped SAML request id; taken once by the callback.
 * - `sso_sign_in_outcomes`: what a callback decided, behind a random handle
 *   (stored as its SHA-256), bound to the interaction (`interaction_uid`;
 *   null for an IdP-initiated sign-in), taken once.
 */
const signIn: Migration = {
  name: '0002_sso_sign_in',
  async up(db) {
    await db.schema.createTable(SSO_POLICIES_TABLE, (t) => {
      t.string('organization_id', 36).primary().references('id').inTable('identity_organizations').onDelete('CASCADE');
      t.boolean('sso_required').notNullable().defaultTo(false);
      t.string('updated_by', 36);
      timestampColumn(t, 'updated_at').notNullable();
    });
    await db.schema.createTable(SSO_SIGN_IN_TRANSACTIONS_TABLE, (t) => {
      t.string('key', 64).primary();
      t.string('connection_id', 36).notNullable().references('id').inTable(SSO_CONNECTIONS_TABLE).onDelete('CASCADE');
      t.string('protocol', 8).notNullable();
      t.string('interaction_uid', 128).notNullable();
      t.string('return_path', 1024).notNullable();
      t.text('data').notNullable();
      timestampColumn(t, 'expires_at').notNullable();
      t.index(['expires_at']);
    });
    await db.schema.createTable(SSO_SIGN_IN_OUTCOMES_TABLE, (t) => {
      t.string('key', 64).primary();
      t.string('kind', 16).notNullable();
      t.string('interaction_uid', 128);
      t.text('data').notNullable();
      timestampColumn(t, 'expires_at').notNullable();
      t.index(['expires_at']);
    });
  },
  async down(db) {
    await db.schema.dropTableIfExists(SSO_SIGN_IN_OUTCOMES_TABLE);
    await db.schema.dropTableIfExists(SSO_SIGN_IN_TRANSACTIONS_TABLE);
    await db.schema.dropTableIfExists(SSO_POLICIES_TABLE);
  },
};

/** The migrations of `@idt/sso`, recorded in `idt_sso_migrations`; they reference identity's organizations and users. */
export const ssoMigrations: MigrationSet = {
  owner: '@idt/sso',
  tableName: 'idt_sso_migrations',
  dependsOn: ['@idt/core', '@idt/identity'],
  migrations: [initial, signIn],
};
