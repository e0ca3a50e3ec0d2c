import type { AuditEntry, AuditTrail } from '@idt/core';
import { type CacheInvalidator, toIso, toIsoOrNull } from '@idt/core/knex';
import { CacheNamespaces } from '@idt/identity';
import { writeRevocation } from '@idt/identity/knex';
import type { Knex } from 'knex';
import type { ClientChanges, ClientStore, ScopeRow, StoredBranding, StoredClient } from '../clients/store.js';

interface ClientRow {
  client_id: string;
  organization_id: string | null;
  kind: string;
  name: string;
  status: string;
  first_party: boolean | number;
  redirect_uris: string;
  post_logout_redirect_uris: string;
  backchannel_logout_uri: string | null;
  backchannel_logout_session_required: boolean | number;
  frontchannel_logout_uri: string | null;
  scopes: string;
  refresh_token_lifetime: number | null;
  secret_hash: string;
  created_by_user_id: string | null;
  created_at: unknown;
  updated_at: unknown;
  last_used_at: unknown;
  last_rotated_at: unknown;
  last_rotated_by_user_id: string | null;
  display_name: string | null;
  tagline: string | null;
  theme_json: string | null;
  logo: Buffer | null;
  logo_content_type: string | null;
}

function toClient(row: ClientRow): StoredClient {
  return {
    clientId: row.client_id,
    organizationId: row.organization_id,
    name: row.name,
    kind: row.kind as StoredClient['kind'],
    status: row.status as StoredClient['status'],
    firstParty: Boolean(row.first_party),
    redirectUris: JSON.parse(row.redirect_uris) as string[],
    postLogoutRedirectUris: JSON.parse(row.post_logout_redirect_uris) as string[],
    backchannelLogoutUri: row.backchannel_logout_uri,
    backchannelLogoutSessionRequired: Boolean(row.backchannel_logout_session_required),
    frontchannelLogoutUri: row.frontchannel_logout_uri,
    scopes: JSON.parse(row.scopes) as string[],
    refreshTokenLifetime: row.refresh_token_lifetime === null ? null : Number(row.refresh_token_lifetime),
    createdByUserId: row.created_by_user_id,
    createdAt: toIso(row.created_at),
    updatedAt: toIso(row.updated_at),
    lastUsedAt: toIsoOrNull(row.last_used_at),
    lastRotatedAt: toIsoOrNull(row.last_rotated_at),
    lastRotatedByUserId: row.last_rotated_by_user_id,
    secretHash: row.secret_hash,
    branding:
      row.display_name === null
        ? null
        : {
            displayName: row.display_name,
            tagline: row.tagline,
            themeJson: row.theme_json ? (JSON.parse(row.theme_json) as StoredBranding['themeJson']) : null,
            logo: row.logo ? Buffer.from(row.logo) : null,
            logoContentType: row.logo_content_type,
          },
  };
}

function changeColumns(changes: ClientChanges): Record<string, unknown> {
  const columns: Record<string, unknown> = {};
  if (changes.redirectUris !== undefined) columns.redirect_uris = JSON.stringify(changes.redirectUris);
  if (changes.postLogoutRedirectUris !== undefined)
    columns.post_logout_redirect_uris = JSON.stringify(changes.postLogoutRedirectUris);
  if (changes.backchannelLogoutUri !== undefined) columns.backchannel_logout_uri = changes.backchannelLogoutUri;
  if (changes.backchannelLogoutSessionRequired !== undefined) {
    columns.backchannel_logout_session_required = changes.backchannelLogoutSessionRequired;
  }
  if (changes.frontchannelLogoutUri !== undefined) columns.frontchannel_logout_uri = changes.frontchannelLogoutUri;
  if (changes.scopes !== undefined) columns.scopes = JSON.stringify(changes.scopes);
  if (changes.refreshTokenLifetime !== undefined) columns.refresh_token_lifetime = changes.refreshTokenLifetime;
  return columns;
}

/**
 * The knex {@link ClientStore}. Every write evicts the client from the
 * caches of all instances (`identity.clients`) when its transaction commits,
 * and records the audit entries it was given through `audit` (`ctx.audit`)
 * in that transaction; without a trail it records nothing.
 */
export function createKnexClientStore(db: Knex, invalidator: CacheInvalidator, audit?: Pick<AuditTrail, 'record'>): ClientStore {
  const record = async (trx: Knex.Transaction, entries: readonly AuditEntry[] | undefined) => {
    if (audit && entries && entries.length > 0) await audit.record(entries, trx);
  };
  /**
   * Evicts the client, and its revocation watermark when the write changed
   * it, from every instance's caches at commit: one statement for both.
   */
  const evict = (trx: Knex.Transaction, clientId: string, revocationChanged = false) =>
    invalidator.invalidateMany(
      revocationChanged
        ? [
            { namespace: CacheNamespaces.revocations, key: `client:${clientId}` },
            { namespace: CacheNamespaces.clients, key: clientId },
          ]
        : [{ namespace: CacheNamespaces.clients, key: clientId }],
      trx,
    );
  /**
   * A deleted client's id is free to register again, but its deletion left a
   * "refuse every token" watermark. The new client's tokens must work, the
   * deleted one's stay refused: the watermark becomes "refuse tokens issued up
   * to the deletion" (its `created_at`, the time of the last revocation).
   * Answers whether there was one to change.
   */
  const reopenRevocation = async (trx: Knex.Transaction, clientId: string): Promise<boolean> => {
    const key = { subject_type: 'client', subject_id: clientId };
    const previous = (await trx('identity_token_revocations').where(key).first('created_at')) as
      | { created_at: unknown }
      | undefined;
    if (!previous) return false;
    const notBefore = Math.floor(new Date(toIso(previous.created_at)).getTime() / 1000) + 1;
    await trx('identity_token_revocations').where(key).update({ not_before: notBefore });
    return true;
  };
  /**
   * Deletes the client's grants and every row of each (codes, refresh
   * tokens): only grant rows carry the client's id (see the adapter), and
   * a code or refresh token has its grant's id.
   */
  const deleteClientGrants = (trx: Knex.Transaction, clientId: string) =>
    trx('oidc_payloads')
      .whereIn('grant_id', trx('oidc_payloads').where({ model: 'Grant', client_id: clientId }).select('grant_id'))
      .delete();

  async function find(clientId: string, trx: Knex | Knex.Transaction = db) {
    const row = (await trx('oidc_clients').where({ client_id: clientId }).first()) as ClientRow | undefined;
    return row ? toClient(row) : undefined;
  }

  return {
    find: (clientId) => find(clientId),
    async list(organizationId) {
      const query = db('oidc_clients').orderBy('created_at', 'asc').orderBy('client_id', 'asc');
      if (organizationId === null) query.whereNull('organization_id');
      else if (organizationId !== undefined) query.where({ organization_id: organizationId });
      return ((await query) as ClientRow[]).map(toClient);
    },
    async insert(client, entries) {
      await db.transaction(async (trx) => {
        await trx('oidc_clients').insert({
          client_id: client.clientId,
          organization_id: client.organizationId,
          kind: client.kind,
          name: client.name,
          status: client.status,
          first_party: client.firstParty,
          redirect_uris: JSON.stringify(client.redirectUris),
          post_logout_redirect_uris: JSON.stringify(client.postLogoutRedirectUris),
          backchannel_logout_uri: client.backchannelLogoutUri,
          backchannel_logout_session_required: client.backchannelLogoutSessionRequired,
          frontchannel_logout_uri: client.frontchannelLogoutUri,
          scopes: JSON.stringify(client.scopes),
          refresh_token_lifetime: client.refreshTokenLifetime,
          secret_hash: client.secretHash,
          created_by_user_id: client.createdByUserId,
          created_at: client.createdAt,
          updated_at: client.updatedAt,
        });
        await evict(trx, client.clientId, await reopenRevocation(trx, client.clientId));
        await record(trx, entries);
      });
    },
    async update(clientId, changes, at, entries) {
      return db.transaction(async (trx) => {
        const updated = await trx('oidc_clients')
          .where({ client_id: clientId })
          .update({ ...changeColumns(changes), updated_at: at.toISOString() });
        if (updated === 0) return undefined;
        await evict(trx, clientId);
        await record(trx, entries);
        return find(clientId, trx);
      });
    },
    async delete(clientId, at, entries) {
      return db.transaction(async (trx) => {
        const deleted = await trx('oidc_clients').where({ client_id: clientId }).delete();
        if (deleted === 0) return false;
        await deleteClientGrants(trx, clientId);
        await writeRevocation(trx, 'client', clientId, at, { all: true });
        await evict(trx, clientId, true);
        await record(trx, entries);
        return true;
      });
    },
    async rotateSecret(clientId, secretHash, options, entries) {
      return db.transaction(async (trx) => {
        const updated = await trx('oidc_clients').where({ client_id: clientId }).update({
          secret_hash: secretHash,
          last_rotated_at: options.at.toISOString(),
          last_rotated_by_user_id: options.byUserId,
          updated_at: options.at.toISOString(),
        });
        if (updated === 0) return undefined;
        if (options.revokeActiveTokens) {
          await deleteClientGrants(trx, clientId);
          await writeRevocation(trx, 'client', clientId, options.at);
        }
        await evict(trx, clientId, options.revokeActiveTokens);
        await record(trx, entries);
        return find(clientId, trx);
      });
    },
    async setStatus(clientId, from, to, at, entries) {
      return db.transaction(async (trx) => {
        const updated = await trx('oidc_clients')
          .where({ client_id: clientId, status: from })
          .update({ status: to, updated_at: at.toISOString() });
        if (updated === 0) {
          const exists = await trx('oidc_clients').where({ client_id: clientId }).first('client_id');
          return exists ? 'unchanged' : 'not-found';
        }
        if (to === 'suspended') {
          // Every token so far ends: access tokens by the watermark, refresh tokens (and their grants) here,
          // so a reinstated client does not bring the suspended sign-ins back.
          await deleteClientGrants(trx, clientId);
          await writeRevocation(trx, 'client', clientId, at);
        }
        await evict(trx, clientId, to === 'suspended');
        await record(trx, entries);
        return 'updated';
      });
    },
    async setBranding(clientId, branding, at, entries) {
      return db.transaction(async (trx) => {
        const updated = await trx('oidc_clients')
          .where({ client_id: clientId })
          .update({
            display_name: branding?.displayName ?? null,
            tagline: branding?.tagline ?? null,
            theme_json: branding?.themeJson ? JSON.stringify(branding.themeJson) : null,
            logo: branding?.logo ?? null,
            logo_content_type: branding?.logoContentType ?? null,
            updated_at: at.toISOString(),
          });
        if (updated === 0) return false;
        await evict(trx, clientId);
        await record(trx, entries);
        return true;
      });
    },
    async touch(clientId, at) {
      await db('oidc_clients').where({ client_id: clientId }).update({ last_used_at: at.toISOString() });
    },
    async scopes() {
      const rows = await db('oidc_scopes').orderBy('scope');
      return rows.map(
        (row: {
          scope: string;
          description: string;
          is_default: boolean | number;
          platform_only: boolean | number;
        }): ScopeRow => ({
          scope: row.scope,
          description: row.description,
          default: Boolean(row.is_default),
          platformOnly: Boolean(row.platform_only),
        }),
      );
    },
    async upsertScopes(rows) {
      if (rows.length === 0) return;
      const now = new Date().toISOString();
      await db('oidc_scopes')
        .insert(
          rows.map((row) => ({
            scope: row.scope,
            description: row.description,
            is_default: row.default,
            platform_only: row.platformOnly,
            created_at: now,
          })),
        )
        .onConflict('scope')
        .merge(['description', 'is_default', 'platform_only']);
    },
  };
}
