import {
  type Clock,
  checkOutboundUrl,
  isUniqueViolation,
  type OutboundResolver,
  randomToken,
  sha256Hex,
  systemClock,
} from '@idt/core';
import { slugify } from '@idt/identity';
import { ProblemError, ValidationProblem } from '@idt/problem';
import { type ClientAuditContext, clientAuditEntry, OidcAuditActions } from '../audit-actions.js';
import {
  type Branding,
  type BrandingInput,
  BrandingInput as BrandingInputSchema,
  type ClientRecord,
  METADATA_LOGOUT_URI_MESSAGE,
  RegisterClientInput,
  RotateSecretInput,
  ScopeRowInput,
  UpdateClientInput,
} from './schemas.js';
import type { ClientChanges, ClientStore, OrganizationDirectory, ScopeRow, StoredBranding, StoredClient } from './store.js';

/** Who is acting on the clients surface. */
export interface ClientActor {
  readonly userId: string | null;
  /** Platform administrators may grant platform-only scopes. */
  readonly platformAdmin: boolean;
}

/** The registration response (SPEC 2.1): the record, the secret (shown once), the issuer and the API base URL. */
export interface ClientRegistration {
  readonly client: ClientRecord;
  readonly clientSecret: string;
  readonly issuer: string;
  readonly apiBaseUrl: string;
}

/** A new secret, shown once. */
export interface RotatedSecret {
  readonly client: ClientRecord;
  readonly clientSecret: string;
  readonly issuer: string;
  readonly apiBaseUrl: string;
}

/** What {@link ClientService.upsertScopes} did, by scope. */
export interface ScopeUpsert {
  readonly created: string[];
  readonly updated: string[];
  readonly unchanged: string[];
}

/** Options of a registration beyond the request body. */
export interface RegisterOptions {
  /** Seeded first-party client: may pass the organization hint, 7-day refresh default. */
  readonly firstParty?: boolean;
  /** An explicit client id (seeding); derived from the names otherwise. */
  readonly clientId?: string;
  /** An explicit secret (seeding from an existing env file); random otherwise. */
  readonly clientSecret?: string;
}

/** The OAuth clients service (SPEC 2.1, 4.1). */
export interface ClientService {
  /**
   * Registers a client for `organizationId` (`null`: a first-party client bound to no organization).
   * Every change below records its audit action in its transaction: with `audit`, the route's actor and
   * request; without, the acting user (`actor.userId`), else a `system` actor (seeding).
   */
  register(
    actor: ClientActor,
    organizationId: string | null,
    input: unknown,
    options?: RegisterOptions,
    audit?: ClientAuditContext,
  ): Promise<ClientRegistration>;
  list(organizationId?: string | null): Promise<ClientRecord[]>;
  /** @throws ProblemError `Clients.NotFound` when absent or bound to another organization. */
  get(organizationId: string | null | undefined, clientId: string): Promise<ClientRecord>;
  update(
    actor: ClientActor,
    organizationId: string | null | undefined,
    clientId: string,
    input: unknown,
    audit?: ClientAuditContext,
  ): Promise<ClientRecord>;
  delete(organizationId: string | null | undefined, clientId: string, audit?: ClientAuditContext): Promise<void>;
  rotateSecret(
    actor: ClientActor,
    organizationId: string | null | undefined,
    clientId: string,
    input: unknown,
    audit?: ClientAuditContext,
  ): Promise<RotatedSecret>;
  suspend(organizationId: string | null | undefined, clientId: string, audit?: ClientAuditContext): Promise<ClientRecord>;
  reinstate(organizationId: string | null | undefined, clientId: string, audit?: ClientAuditContext): Promise<ClientRecord>;
  getBranding(organizationId: string | null | undefined, clientId: string): Promise<Branding>;
  putBranding(
    organizationId: string | null | undefined,
    clientId: string,
    input: unknown,
    audit?: ClientAuditContext,
  ): Promise<Branding>;
  scopes(): Promise<ScopeRow[]>;
  /**
   * Adds scope rows or updates their description and flags (seeding, by the
   * operator; not exposed over HTTP). Rows equal to the stored ones are left alone.
   *
   * @throws a zod error for bad input.
   */
  upsertScopes(input: readonly ScopeRowInput[]): Promise<ScopeUpsert>;
  /** The stored client (with secret hash) for the provider; no organization check. */
  findStored(clientId: string): Promise<StoredClient | undefined>;
  /** Every stored client (all organizations and platform clients), for the Development landing page. */
  listStored(): Promise<StoredClient[]>;
}

/** Options of {@link createClientService}. */
export interface ClientServiceOptions {
  readonly store: ClientStore;
  readonly organizations: OrganizationDirectory;
  /** The OpenID issuer (IDT_ISSUER plus prefix). */
  readonly issuer: string;
  /** The public base URL of the API. */
  readonly apiBaseUrl: string;
  readonly clock?: Clock;
  /**
   * Resolves back-channel logout hosts at registration, to refuse a name that
   * resolves to a cloud metadata address; the system resolver by default.
   */
  readonly resolve?: OutboundResolver;
}

/** Hashes a client secret for storage: `sha256:<hex>` (secrets are 256-bit random values). */
export function hashClientSecret(secret: string): string {
  return `sha256:${sha256Hex(secret)}`;
}

const LOGO_TYPES: Array<{ type: string; magic: (bytes: Buffer) => boolean }> = [
  { type: 'image/png', magic: (b) => b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])) },
  { type: 'image/jpeg', magic: (b) => b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff },
  {
    type: 'image/webp',
    magic: (b) => b.subarray(0, 4).toString('latin1') === 'RIFF' && b.subarray(8, 12).toString('latin1') === 'WEBP',
  },
];

/** Sniffs a logo's type from its magic bytes (PNG, JPEG or WebP), or `undefined`. */
export function sniffLogoType(bytes: Buffer): string | undefined {
  return LOGO_TYPES.find((candidate) => candidate.magic(bytes))?.type;
}

const MAX_LOGO_BYTES = 2 * 1024 * 1024;

function toRecord(client: StoredClient): ClientRecord {
  const { secretHash: _secret, branding: _branding, ...record } = client;
  return record;
}

/**
 * Creates the clients service: validation of every URI rule, scope checks
 * against the scope rows, id derivation, secrets shown once and stored hashed.
 *
 * @example
 * const clients = createClientService({ store, organizations, issuer, apiBaseUrl });
 * const { client, clientSecret } = await clients.register(actor, orgId, { kind: 'service-account', name: 'Reporting', scopes: ['users.read'] });
 */
export function createClientService(options: ClientServiceOptions): ClientService {
  const { store } = options;
  const clock = options.clock ?? systemClock;

  async function load(organizationId: string | null | undefined, clientId: string): Promise<StoredClient> {
    const client = await store.find(clientId);
    if (!client || (organizationId !== undefined && client.organizationId !== organizationId)) {
      throw new ProblemError('Clients.NotFound');
    }
    return client;
  }

  async function checkScopes(actor: ClientActor, scopes: readonly string[]): Promise<void> {
    const rows = new Map((await store.scopes()).map((row) => [row.scope, row]));
    const unknown = scopes.filter((scope) => !rows.has(scope));
    if (unknown.length > 0) {
      throw new ValidationProblem({ scopes: unknown.map((scope) => `Unknown scope "${scope}".`) });
    }
    const platformOnly = scopes.filter((scope) => rows.get(scope)?.platformOnly);
    if (platformOnly.length > 0 && !actor.platformAdmin) {
      throw new ProblemError('Identity.PlatformOnlyScope', `Only platform administrators may grant ${platformOnly.join(', ')}.`);
    }
  }

  /**
   * Refuses a back-channel logout URI whose host resolves to a cloud metadata
   * address (the schema refused metadata literals and names already). Loopback
   * and private hosts are judged at delivery, by `IDT_BACKCHANNEL_ALLOW_PRIVATE_HOSTS`;
   * a name that does not resolve yet is accepted, and every delivery checks again.
   */
  async function checkBackchannelUri(uri: string | null | undefined): Promise<void> {
    if (!uri) return;
    const check = await checkOutboundUrl(uri, { allowPrivate: true, ...(options.resolve ? { resolve: options.resolve } : {}) });
    if (!check.ok && check.reason === 'metadata') {
      throw new ValidationProblem({ backchannelLogoutUri: [METADATA_LOGOUT_URI_MESSAGE] });
    }
  }

  /** Who acts when the caller said nothing: the acting user, else idt itself (seeding). */
  const contextOf = (audit: ClientAuditContext | undefined, actor?: ClientActor): ClientAuditContext =>
    audit ?? {
      actor: actor?.userId ? { type: 'user', id: actor.userId, display: null } : { type: 'system', id: null, display: null },
    };

  const response = (client: StoredClient, clientSecret: string) => ({
    client: toRecord(client),
    clientSecret,
    issuer: options.issuer,
    apiBaseUrl: options.apiBaseUrl,
  });

  return {
    async register(actor, organizationId, rawInput, registerOptions = {}, audit) {
      const input = RegisterClientInput.parse(rawInput);
      await checkScopes(actor, input.scopes);
      if (input.kind === 'application') await checkBackchannelUri(input.backchannelLogoutUri);
      let prefix = '';
      if (organizationId !== null) {
        const organization = await options.organizations.find(organizationId);
        if (!organization) throw new ProblemError('Clients.NotFound', 'No such organization.');
        if (organization.status !== 'active') throw new ProblemError('Clients.OrganizationInactive');
        prefix = organization.slug;
      }
      const nameSlug = slugify(input.name) || 'client';
      const derived = [input.kind === 'service-account' ? 'sa' : '', prefix, nameSlug].filter(Boolean).join('-');
      const clientId = registerOptions.clientId ?? derived.slice(0, 200);
      const isApplication = input.kind === 'application';
      const clientSecret = registerOptions.clientSecret ?? randomToken(32);
      const now = clock.now().toISOString();
      const client: StoredClient = {
        clientId,
        organizationId,
        name: input.name,
        kind: input.kind,
        status: 'active',
        firstParty: registerOptions.firstParty ?? false,
        redirectUris: isApplication ? (input.redirectUris ?? []) : [],
        postLogoutRedirectUris: isApplication ? (input.postLogoutRedirectUris ?? []) : [],
        backchannelLogoutUri: isApplication ? (input.backchannelLogoutUri ?? null) : null,
        backchannelLogoutSessionRequired: isApplication ? (input.backchannelLogoutSessionRequired ?? false) : false,
        frontchannelLogoutUri: isApplication ? (input.frontchannelLogoutUri ?? null) : null,
        scopes: input.scopes,
        refreshTokenLifetime: isApplication ? (input.refreshTokenLifetime ?? null) : null,
        createdByUserId: actor.userId,
        createdAt: now,
        updatedAt: now,
        lastUsedAt: null,
        lastRotatedAt: null,
        lastRotatedByUserId: null,
        secretHash: hashClientSecret(clientSecret),
        branding: null,
      };
      try {
        await store.insert(client, [
          clientAuditEntry(OidcAuditActions.clientRegistered.action, client, contextOf(audit, actor), {
            kind: client.kind,
            scopes: client.scopes,
            firstParty: client.firstParty,
          }),
        ]);
      } catch (error) {
        if (isUniqueViolation(error))
          throw new ProblemError('Clients.IdTaken', `The client id "${clientId}" is taken; choose another name.`);
        throw error;
      }
      return response(client, clientSecret);
    },

    async list(organizationId) {
      return (await store.list(organizationId)).map(toRecord);
    },

    async get(organizationId, clientId) {
      return toRecord(await load(organizationId, clientId));
    },

    async update(actor, organizationId, clientId, rawInput, audit) {
      const input = UpdateClientInput.parse(rawInput);
      const client = await load(organizationId, clientId);
      if (input.scopes) await checkScopes(actor, input.scopes);
      const isApplication = client.kind === 'application';
      if (isApplication && input.redirectUris && input.redirectUris.length === 0) {
        throw new ValidationProblem({ redirectUris: ['An application needs at least one redirect URI.'] });
      }
      if (isApplication) await checkBackchannelUri(input.backchannelLogoutUri);
      const changes: ClientChanges = isApplication
        ? {
            ...(input.redirectUris !== undefined ? { redirectUris: input.redirectUris } : {}),
            ...(input.postLogoutRedirectUris !== undefined ? { postLogoutRedirectUris: input.postLogoutRedirectUris } : {}),
            ...(input.backchannelLogoutUri !== undefined ? { backchannelLogoutUri: input.backchannelLogoutUri } : {}),
            ...(input.backchannelLogoutSessionRequired !== undefined
              ? { backchannelLogoutSessionRequired: input.backchannelLogoutSessionRequired }
              : {}),
            ...(input.frontchannelLogoutUri !== undefined ? { frontchannelLogoutUri: input.frontchannelLogoutUri } : {}),
            ...(input.scopes !== undefined ? { scopes: input.scopes } : {}),
            // `null` or absent keeps the current value (SPEC 2.1).
            ...(input.refreshTokenLifetime != null ? { refreshTokenLifetime: input.refreshTokenLifetime } : {}),
          }
        : { ...(input.scopes !== undefined ? { scopes: input.scopes } : {}) };
      const updated = await store.update(clientId, changes, clock.now(), [
        clientAuditEntry(OidcAuditActions.clientUpdated.action, client, contextOf(audit, actor), {
          fields: Object.keys(changes).sort(),
        }),
      ]);
      if (!updated) throw new ProblemError('Clients.NotFound');
      return toRecord(updated);
    },

    async delete(organizationId, clientId, audit) {
      const client = await load(organizationId, clientId);
      const entry = clientAuditEntry(OidcAuditActions.clientDeleted.action, client, contextOf(audit));
      if (!(await store.delete(clientId, clock.now(), [entry]))) throw new ProblemError('Clients.NotFound');
    },

    async rotateSecret(actor, organizationId, clientId, rawInput, audit) {
      const input = RotateSecretInput.parse(rawInput);
      const client = await load(organizationId, clientId);
      const clientSecret = randomToken(32);
      const updated = await store.rotateSecret(
        clientId,
        hashClientSecret(clientSecret),
        { at: clock.now(), byUserId: actor.userId, revokeActiveTokens: input.revokeActiveTokens },
        [
          // `revokeActiveTokens` would read as a secret to the trail's guard: the fact, in other words.
          clientAuditEntry(OidcAuditActions.clientSecretRotated.action, client, contextOf(audit, actor), {
            issuedAccessEnded: input.revokeActiveTokens,
          }),
        ],
      );
      if (!updated) throw new ProblemError('Clients.NotFound');
      return response(updated, clientSecret);
    },

    async suspend(organizationId, clientId, audit) {
      const client = await load(organizationId, clientId);
      const outcome = await store.setStatus(clientId, 'active', 'suspended', clock.now(), [
        clientAuditEntry(OidcAuditActions.clientSuspended.action, client, contextOf(audit)),
      ]);
      if (outcome === 'not-found') throw new ProblemError('Clients.NotFound');
      if (outcome === 'unchanged') throw new ProblemError('Identity.ClientAlreadySuspended');
      return toRecord(await load(organizationId, clientId));
    },

    async reinstate(organizationId, clientId, audit) {
      const client = await load(organizationId, clientId);
      const outcome = await store.setStatus(clientId, 'suspended', 'active', clock.now(), [
        clientAuditEntry(OidcAuditActions.clientReinstated.action, client, contextOf(audit)),
      ]);
      if (outcome === 'not-found') throw new ProblemError('Clients.NotFound');
      if (outcome === 'unchanged') throw new ProblemError('Identity.ClientNotSuspended');
      return toRecord(await load(organizationId, clientId));
    },

    async getBranding(organizationId, clientId) {
      const client = await load(organizationId, clientId);
      if (client.kind !== 'application') throw new ProblemError('Clients.NotFound', 'Service accounts have no branding.');
      return brandingOf(client);
    },

    async putBranding(organizationId, clientId, rawInput, audit) {
      const input: ReturnType<typeof BrandingInputSchema.parse> = BrandingInputSchema.parse(rawInput as BrandingInput);
      const client = await load(organizationId, clientId);
      if (client.kind !== 'application') throw new ProblemError('Clients.NotFound', 'Service accounts have no branding.');
      let logo = client.branding?.logo ?? null;
      let logoContentType = client.branding?.logoContentType ?? null;
      if (input.logo === null) {
        logo = null;
        logoContentType = null;
      } else if (input.logo !== undefined) {
        const bytes = Buffer.from(input.logo, 'base64');
        if (bytes.length === 0) throw new ValidationProblem({ logo: ['The logo is empty or not base64.'] });
        if (bytes.length > MAX_LOGO_BYTES) throw new ValidationProblem({ logo: ['A logo is at most 2 MiB.'] });
        const type = sniffLogoType(bytes);
        if (!type) throw new ValidationProblem({ logo: ['Use a PNG, JPEG or WebP image.'] });
        logo = bytes;
        logoContentType = type;
      }
      const branding: StoredBranding = {
        displayName: input.displayName,
        tagline: input.tagline ?? null,
        themeJson: input.themeJson ?? null,
        logo,
        logoContentType,
      };
      const entry = clientAuditEntry(OidcAuditActions.clientBrandingChanged.action, client, contextOf(audit), {
        displayName: branding.displayName,
        logo: input.logo === undefined ? 'kept' : input.logo === null ? 'removed' : 'replaced',
      });
      if (!(await store.setBranding(clientId, branding, clock.now(), [entry]))) throw new ProblemError('Clients.NotFound');
      return brandingOf({ ...client, branding });
    },

    scopes: () => store.scopes(),

    async upsertScopes(input) {
      const rows = ScopeRowInput.array().parse(input);
      const stored = new Map((await store.scopes()).map((row) => [row.scope, row]));
      const result: ScopeUpsert = { created: [], updated: [], unchanged: [] };
      const changed: ScopeRow[] = [];
      for (const row of new Map(rows.map((entry) => [entry.scope, entry])).values()) {
        const current = stored.get(row.scope);
        if (!current) result.created.push(row.scope);
        else if (
          current.description === row.description &&
          current.default === row.default &&
          current.platformOnly === row.platformOnly
        ) {
          result.unchanged.push(row.scope);
          continue;
        } else result.updated.push(row.scope);
        changed.push(row);
      }
      await store.upsertScopes(changed);
      return result;
    },

    findStored: (clientId) => store.find(clientId),
    listStored: () => store.list(),
  };
}

/** The branding of a client as the API shows it (the logo as a data URL); falls back to the client name. */
export function brandingOf(client: StoredClient): Branding {
  const branding = client.branding;
  return {
    displayName: branding?.displayName ?? client.name,
    tagline: branding?.tagline ?? null,
    themeJson: branding?.themeJson ?? null,
    logo:
      branding?.logo && branding.logoContentType
        ? `data:${branding.logoContentType};base64,${branding.logo.toString('base64')}`
        : null,
  };
}
