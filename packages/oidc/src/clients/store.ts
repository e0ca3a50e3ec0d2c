import type { AuditEntry } from '@idt/core';
import type { ClientKind, ClientRecord, ClientStatus } from './schemas.js';

/** Branding as stored, logo bytes included. */
export interface StoredBranding {
  readonly displayName: string;
  readonly tagline: string | null;
  readonly themeJson: {
    light: { primary: string; primaryForeground: string };
    dark: { primary: string; primaryForeground: string };
  } | null;
  readonly logo: Buffer | null;
  readonly logoContentType: string | null;
}

/** A client as stored: the record plus the secret hash and branding. */
export interface StoredClient extends ClientRecord {
  /** `sha256:<hex>` of the client secret; the secret itself is never stored. */
  readonly secretHash: string;
  readonly branding: StoredBranding | null;
}

/** A row of the scope table. */
export interface ScopeRow {
  readonly scope: string;
  readonly description: string;
  readonly default: boolean;
  readonly platformOnly: boolean;
}

/** Fields a client update may change. */
export interface ClientChanges {
  readonly redirectUris?: string[];
  readonly postLogoutRedirectUris?: string[];
  readonly backchannelLogoutUri?: string | null;
  readonly backchannelLogoutSessionRequired?: boolean;
  readonly frontchannelLogoutUri?: string | null;
  readonly scopes?: string[];
  readonly refreshTokenLifetime?: number | null;
}

/**
 * Persistence of OAuth clients and scope rows. Every write invalidates the
 * client caches of all instances. A write given `audit` entries records them
 * on the audit trail in its transaction, after the change and only when the
 * change happened (none for a missing client or a status already moved).
 */
export interface ClientStore {
  find(clientId: string): Promise<StoredClient | undefined>;
  /** Clients of one organization (`null`: clients bound to none), or every client when `organizationId` is undefined. */
  list(organizationId?: string | null): Promise<StoredClient[]>;
  /** @throws a unique-violation database error when the client id is taken. */
  insert(client: StoredClient, audit?: readonly AuditEntry[]): Promise<void>;
  update(clientId: string, changes: ClientChanges, at: Date, audit?: readonly AuditEntry[]): Promise<StoredClient | undefined>;
  /**
   * Deletes the client, its grants, refresh tokens and consents, and refuses
   * every token it holds (revocation watermark), in one transaction.
   */
  delete(clientId: string, at: Date, audit?: readonly AuditEntry[]): Promise<boolean>;
  /**
   * Replaces the secret hash; with `revokeActiveTokens`, also refuses every
   * token issued so far and deletes the client's refresh tokens. One transaction.
   */
  rotateSecret(
    clientId: string,
    secretHash: string,
    options: { at: Date; byUserId: string | null; revokeActiveTokens: boolean },
    audit?: readonly AuditEntry[],
  ): Promise<StoredClient | undefined>;
  /**
   * Moves status `from` → `to` atomically (`UPDATE … WHERE status = from`).
   * Suspension also refuses every token issued so far and deletes the client's refresh tokens.
   *
   * @returns `updated`, `not-found`, or `unchanged` when the client was not in `from`.
   */
  setStatus(
    clientId: string,
    from: ClientStatus,
    to: ClientStatus,
    at: Date,
    audit?: readonly AuditEntry[],
  ): Promise<'updated' | 'not-found' | 'unchanged'>;
  setBranding(clientId: string, branding: StoredBranding | null, at: Date, audit?: readonly AuditEntry[]): Promise<boolean>;
  /** Records use at the token endpoint (throttled by the caller). */
  touch(clientId: string, at: Date): Promise<void>;
  scopes(): Promise<ScopeRow[]>;
  /** Adds or updates scope rows (seeding). */
  upsertScopes(rows: readonly ScopeRow[]): Promise<void>;
}

/** What the clients service needs to know about organizations. */
export interface OrganizationDirectory {
  find(
    organizationId: string,
  ): Promise<{ id: string; name: string; slug: string; status: string; isPlatform: boolean } | undefined>;
}

/** Re-export for store implementers. */
export type { ClientKind };
