import { X509Certificate } from 'node:crypto';
import {
  type AuditEntry,
  type AuditMetadata,
  type Clock,
  isUuid,
  newId,
  type PendingEvent,
  refuseHost,
  systemClock,
} from '@idt/core';
import { ProblemError } from '@idt/problem';
import { authorizeOrganization, authorizePlatform, type SsoActor, type SsoDirectory } from '../access.js';
import { type CONNECTION_CHANGES, SsoConnectionChangedEvent, type SsoConnectionChangedPayload } from '../events.js';
import '../problems.js';
import { SsoAuditActions, ssoChangeEntry } from '../audit-actions.js';
import { assertSamlConnection, type SamlConnection } from '../saml/connection.js';
import { parseIdpMetadata } from '../saml/idp-metadata.js';
import { safeRelayState } from '../saml/relay-state.js';
import { SIGN_IN_REALM_EVICTIONS } from '../sign-in/realm-cache.js';
import type { MetadataFetcher } from './metadata-source.js';
import type { AttributeMapping, ConnectionKind, ConnectionRecord, RoleMappingEntry, SamlConnectionConfig } from './records.js';
import type { ConnectionResponse, CreateConnectionInput, UpdateConnectionInput } from './schemas.js';
import type { ConnectionsStore } from './store.js';

/** The claims an OIDC connection reads unless its mapping says otherwise. */
export const DEFAULT_OIDC_MAPPING: AttributeMapping = Object.freeze({
  email: 'email',
  emailVerified: 'email_verified',
  firstName: 'given_name',
  lastName: 'family_name',
  name: 'name',
  groups: 'groups',
});

/** The attributes a SAML connection reads unless its mapping says otherwise. */
export const DEFAULT_SAML_MAPPING: AttributeMapping = Object.freeze({
  email: 'email',
  firstName: 'firstName',
  lastName: 'lastName',
  name: 'displayName',
  groups: 'groups',
});

/** The scopes an OIDC connection asks for by default. */
export const DEFAULT_OIDC_SCOPES: readonly string[] = Object.freeze(['openid', 'email', 'profile']);

/** Roles a just-in-time member may get from a connection besides the organization's custom roles; never `owner`. */
export const ASSIGNABLE_BUILT_IN_ROLES: readonly string[] = Object.freeze(['admin', 'manager', 'user']);

/** The role of a just-in-time member when the connection names none. */
export const DEFAULT_JIT_ROLE = 'user';

/** The addresses of a connection's SAML service provider and OIDC callback, under the public base URL. */
export interface ConnectionUrls {
  /** The SP entity id: its metadata URL, so every connection has its own. */
  readonly spEntityId: string;
  readonly acsUrl: string;
  readonly spMetadataUrl: string;
  /** The single OIDC callback of the deployment. */
  readonly oidcRedirectUri: string;
}

/** The audit entry of a connection change, on its organization's trail (the platform's for a platform connection). */
function connectionEntry(action: string, actor: SsoActor, connection: ConnectionRecord, metadata?: AuditMetadata): AuditEntry {
  return ssoChangeEntry(
    action,
    actor,
    connection.organizationId,
    { type: 'ssoConnection', id: connection.id, display: connection.name },
    metadata,
  );
}

/**
 * The settings an update named, as dotted paths (`oidc.issuer`); a new OIDC
 * client secret is named `oidc.clientSecretChanged`, so the trail's guard,
 * which refuses secret-looking keys and not values, sees a fact, not a secret.
 */
function changedFields(input: UpdateConnectionInput): string[] {
  const fields: string[] = [];
  for (const [key, value] of Object.entries(input)) {
    if (value === undefined) continue;
    if ((key === 'oidc' || key === 'saml') && value && typeof value === 'object') {
      for (const [inner, innerValue] of Object.entries(value)) {
        if (innerValue === undefined) continue;
        fields.push(inner === 'clientSecret' ? `${key}.clientSecretChanged` : `${key}.${inner}`);
      }
    } else fields.push(key);
  }
  return fields.sort();
}

/** Options of {@link createSsoConnectionsService}. */
export interface SsoConnectionsServiceOptions {
  readonly store: ConnectionsStore;
  readonly directory: SsoDirectory;
  /** The public base URL of the deployment, prefix included (`ctx.config.publicBaseUrl`). */
  readonly publicBaseUrl: string;
  /** Reads IdP metadata from a URL (through the outbound guard). */
  readonly fetchMetadata: MetadataFetcher;
  /** Accept http and loopback or private issuers (local demos and tests). */
  readonly allowPrivateHosts: boolean;
  readonly clock?: Clock;
}

/**
 * Single sign-on connections of organizations (`organizationId`) and of the
 * platform (`null`). Organization connections are managed by the
 * organization's owners and admins and by platform administrators; another
 * organization answers 404. Platform connections are managed by platform
 * administrators. Every change is one transaction that also publishes
 * `SsoConnectionChangedEvent`.
 */
export interface SsoConnectionsService {
  list(actor: SsoActor, organizationId: string | null): Promise<ConnectionResponse[]>;
  /**
   * Creates a connection (disabled unless `enabled: true`). A SAML
   * connection's metadata is read from `metadataXml` or fetched from
   * `metadataUrl` before the transaction.
   */
  create(actor: SsoActor, organizationId: string | null, input: CreateConnectionInput): Promise<ConnectionResponse>;
  get(actor: SsoActor, organizationId: string | null, id: string): Promise<ConnectionResponse>;
  /** Changes the given fields; the kind never changes. */
  update(actor: SsoActor, organizationId: string | null, id: string, input: UpdateConnectionInput): Promise<ConnectionResponse>;
  remove(actor: SsoActor, organizationId: string | null, id: string): Promise<void>;
  setEnabled(actor: SsoActor, organizationId: string | null, id: string, enabled: boolean): Promise<ConnectionResponse>;
  /** A connection by id, secret opened: for the sign-in pipeline, never for an answer. */
  find(id: string): Promise<ConnectionRecord | undefined>;
  /** The addresses of a connection. */
  urls(id: string): ConnectionUrls;
  /** What the SAML service provider of a SAML connection is built over. */
  samlConnectionOf(connection: ConnectionRecord): SamlConnection;
}

function invalid(detail: string): ProblemError {
  return new ProblemError('Sso.InvalidConnection', detail);
}

function notFound(): ProblemError {
  return new ProblemError('Sso.ConnectionNotFound');
}

function certificateSummary(pem: string) {
  const certificate = new X509Certificate(pem);
  return {
    fingerprintSha256: certificate.fingerprint256,
    subject: certificate.subject,
    notAfter: new Date(certificate.validTo).toISOString(),
  };
}

/** Prepared SAML settings: the IdP as read from new metadata, or nothing when no metadata was given. */
interface PreparedSaml {
  readonly idp?: Pick<
    SamlConnectionConfig,
    'idpEntityId' | 'idpSsoUrl' | 'idpCertificates' | 'metadataUrl' | 'wantAuthnRequestsSigned'
  >;
}

/**
 * Creates the connections service.
 *
 * @example
 * const connections = createSsoConnectionsService({ store, directory, publicBaseUrl, fetchMetadata, allowPrivateHosts: false });
 * const created = await connections.create(principal, organizationId, { kind: 'saml', name: 'Acme Okta', saml: { metadataUrl } });
 */
export function createSsoConnectionsService(options: SsoConnectionsServiceOptions): SsoConnectionsService {
  const { store, directory, fetchMetadata, allowPrivateHosts } = options;
  const clock = options.clock ?? systemClock;
  const base = options.publicBaseUrl.replace(/\/+$/, '');
  const origin = new URL(base).origin;

  const urls = (id: string): ConnectionUrls => ({
    spEntityId: `${base}/sso/saml/${id}/metadata`,
    acsUrl: `${base}/sso/saml/${id}/acs`,
    spMetadataUrl: `${base}/sso/saml/${id}/metadata`,
    oidcRedirectUri: `${base}/sso/oidc/callback`,
  });

  const samlConnectionOf = (connection: ConnectionRecord): SamlConnection => {
    const saml = connection.saml;
    if (!saml) throw invalid('This is not a SAML connection.');
    const { spEntityId, acsUrl } = urls(connection.id);
    return {
      spEntityId,
      acsUrl,
      idpEntityId: saml.idpEntityId,
      idpSsoUrl: saml.idpSsoUrl,
      idpCertificates: saml.idpCertificates,
      allowIdpInitiated: connection.allowIdpInitiated,
      ...(connection.defaultRelayState ? { defaultRelayState: connection.defaultRelayState } : {}),
      ...(saml.nameIdFormat ? { nameIdFormat: saml.nameIdFormat } : {}),
    };
  };

  const toResponse = (record: ConnectionRecord): ConnectionResponse => {
    const addresses = urls(record.id);
    return {
      id: record.id,
      organizationId: record.organizationId,
      kind: record.kind,
      name: record.name,
      enabled: record.enabled,
      attributeMapping: { ...record.attributeMapping } as Record<string, string>,
      roleMapping: record.roleMapping.map(({ group, role }) => ({ group, role })),
      defaultRole: record.defaultRole,
      oidc: record.oidc
        ? {
            issuer: record.oidc.issuer,
            clientId: record.oidc.clientId,
            clientSecretSet: record.clientSecret !== null && record.clientSecret !== '',
            scopes: [...record.oidc.scopes],
            redirectUri: addresses.oidcRedirectUri,
          }
        : null,
      saml: record.saml
        ? {
            idpEntityId: record.saml.idpEntityId,
            idpSsoUrl: record.saml.idpSsoUrl,
            idpCertificates: record.saml.idpCertificates.map(certificateSummary),
            metadataUrl: record.saml.metadataUrl,
            nameIdFormat: record.saml.nameIdFormat,
            allowIdpInitiated: record.allowIdpInitiated,
            defaultRelayState: record.defaultRelayState,
            spEntityId: addresses.spEntityId,
            acsUrl: addresses.acsUrl,
            spMetadataUrl: addresses.spMetadataUrl,
          }
        : null,
      createdAt: record.createdAt,
      updatedAt: record.updatedAt,
    };
  };

  async function authorize(actor: SsoActor, organizationId: string | null): Promise<void> {
    if (organizationId === null) await authorizePlatform(directory, actor);
    else await authorizeOrganization(directory, actor, organizationId);
  }

  function checkIssuer(value: string): string {
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      throw invalid('The issuer is not an absolute URL.');
    }
    if (url.protocol !== 'https:' && !(allowPrivateHosts && url.protocol === 'http:')) {
      throw invalid('The issuer must be an https URL.');
    }
    if (url.username || url.password || url.search || url.hash) {
      throw invalid('The issuer is a URL without credentials, query or fragment.');
    }
    if (refuseHost(url.hostname, allowPrivateHosts)) {
      throw invalid('The issuer is a loopback, private or cloud metadata address.');
    }
    return value;
  }

  function scopesOf(scopes: readonly string[] | undefined): string[] {
    const list = [...(scopes ?? DEFAULT_OIDC_SCOPES)];
    if (!list.includes('openid')) list.unshift('openid');
    return [...new Set(list)];
  }

  async function checkRoles(
    organizationId: string | null,
    defaultRole: string | null | undefined,
    roleMapping: readonly RoleMappingEntry[] | undefined,
  ): Promise<void> {
    const roles = [...(defaultRole ? [defaultRole] : []), ...(roleMapping ?? []).map((entry) => entry.role)];
    if (organizationId === null) {
      if (roles.length > 0) {
        throw invalid('Platform connections create no membership: leave out defaultRole and roleMapping.');
      }
      return;
    }
    for (const role of new Set(roles)) {
      if (role === 'owner')
        throw invalid('A connection never makes an owner: map groups to admin, manager, user or a custom role.');
      if (ASSIGNABLE_BUILT_IN_ROLES.includes(role)) continue;
      if (!(await directory.hasCustomRole(organizationId, role))) {
        throw invalid(`The organization has no role "${role}".`);
      }
    }
  }

  function checkRelayState(value: string | null | undefined): string | null | undefined {
    if (value === undefined || value === null) return value;
    const safe = safeRelayState(value, origin);
    if (!safe) throw invalid('The default RelayState must be a path on this server, such as /account.');
    return safe;
  }

  async function readMetadata(input: {
    metadataXml?: string | undefined;
    metadataUrl?: string | undefined;
  }): Promise<PreparedSaml> {
    let xml: string;
    let metadataUrl: string | null = null;
    if (input.metadataXml !== undefined) xml = input.metadataXml;
    else if (input.metadataUrl !== undefined) {
      metadataUrl = input.metadataUrl;
      xml = await fetchMetadata(input.metadataUrl);
    } else return {};
    const idp = parseIdpMetadata(xml);
    return {
      idp: {
        idpEntityId: idp.entityId,
        idpSsoUrl: idp.ssoUrl,
        idpCertificates: idp.signingCertificates,
        metadataUrl,
        wantAuthnRequestsSigned: idp.wantAuthnRequestsSigned,
      },
    };
  }

  function checkSaml(record: ConnectionRecord): void {
    if (record.allowIdpInitiated && !record.defaultRelayState) {
      throw invalid('IdP-initiated sign-in needs a defaultRelayState: where the person lands.');
    }
    assertSamlConnection(samlConnectionOf(record));
  }

  function event(record: ConnectionRecord, change: (typeof CONNECTION_CHANGES)[number], actor: SsoActor): PendingEvent {
    const payload: SsoConnectionChangedPayload = {
      connectionId: record.id,
      organizationId: record.organizationId,
      kind: record.kind,
      name: record.name,
      change,
      enabled: change === 'deleted' ? false : record.enabled,
      changedBy: actor.userId,
      changedAt: clock.now().toISOString(),
    };
    return { event: SsoConnectionChangedEvent, payload };
  }

  const key = (id: string) => {
    const lower = id.trim().toLowerCase();
    if (!isUuid(lower)) throw notFound();
    return lower;
  };

  const mappingOf = (kind: ConnectionKind, mapping: AttributeMapping | undefined): AttributeMapping => ({
    ...(kind === 'oidc' ? DEFAULT_OIDC_MAPPING : DEFAULT_SAML_MAPPING),
    ...mapping,
  });

  return {
    urls,
    samlConnectionOf,

    async list(actor, organizationId) {
      await authorize(actor, organizationId);
      return (await store.list(organizationId)).map(toResponse);
    },

    async get(actor, organizationId, id) {
      await authorize(actor, organizationId);
      const record = await store.find(organizationId, key(id));
      if (!record) throw notFound();
      return toResponse(record);
    },

    async find(id) {
      const lower = id.trim().toLowerCase();
      return isUuid(lower) ? store.findById(lower) : undefined;
    },

    async create(actor, organizationId, input) {
      await authorize(actor, organizationId);
      await checkRoles(organizationId, input.defaultRole, input.roleMapping);
      const now = clock.now().toISOString();
      const id = newId();
      const common = {
        id,
        organizationId,
        kind: input.kind,
        name: input.name,
        enabled: input.enabled ?? false,
        attributeMapping: mappingOf(input.kind, input.attributeMapping),
        roleMapping: input.roleMapping ?? [],
        defaultRole: organizationId === null ? null : (input.defaultRole ?? DEFAULT_JIT_ROLE),
        createdAt: now,
        updatedAt: now,
      };
      let record: ConnectionRecord;
      if (input.kind === 'oidc') {
        record = {
          ...common,
          oidc: { issuer: checkIssuer(input.oidc.issuer), clientId: input.oidc.clientId, scopes: scopesOf(input.oidc.scopes) },
          saml: null,
          clientSecret: input.oidc.clientSecret,
          allowIdpInitiated: false,
          defaultRelayState: null,
        };
      } else {
        const relayState = checkRelayState(input.saml.defaultRelayState) ?? null;
        const { idp } = await readMetadata(input.saml);
        if (!idp) throw invalid('Give the identity provider metadata: metadataXml or metadataUrl.');
        record = {
          ...common,
          oidc: null,
          saml: { ...idp, nameIdFormat: input.saml.nameIdFormat ?? null },
          clientSecret: null,
          allowIdpInitiated: input.saml.allowIdpInitiated ?? false,
          defaultRelayState: relayState,
        };
        checkSaml(record);
      }
      await store.transaction(async (tx) => {
        await tx.insert(record);
        await tx.evict(SIGN_IN_REALM_EVICTIONS);
        await tx.publish([event(record, 'created', actor)]);
        await tx.audit?.([
          connectionEntry(SsoAuditActions.connectionCreated.action, actor, record, {
            kind: record.kind,
            enabled: record.enabled,
          }),
        ]);
      });
      return toResponse(record);
    },

    async update(actor, organizationId, id, input) {
      await authorize(actor, organizationId);
      const connectionId = key(id);
      const current = await store.find(organizationId, connectionId);
      if (!current) throw notFound();
      if (current.kind === 'oidc' && input.saml) throw invalid('This is an oidc connection: change it with `oidc`, not `saml`.');
      if (current.kind === 'saml' && input.oidc) throw invalid('This is a saml connection: change it with `saml`, not `oidc`.');
      await checkRoles(organizationId, input.defaultRole, input.roleMapping);
      const issuer = input.oidc?.issuer !== undefined ? checkIssuer(input.oidc.issuer) : undefined;
      const relayState = checkRelayState(input.saml?.defaultRelayState);
      const prepared = input.saml ? await readMetadata(input.saml) : {};
      const updated = await store.transaction(async (tx) => {
        const fresh = await tx.find(organizationId, connectionId);
        if (!fresh) throw notFound();
        let next: ConnectionRecord = {
          ...fresh,
          ...(input.name !== undefined ? { name: input.name } : {}),
          ...(input.attributeMapping !== undefined ? { attributeMapping: mappingOf(fresh.kind, input.attributeMapping) } : {}),
          ...(input.roleMapping !== undefined ? { roleMapping: input.roleMapping } : {}),
          ...(input.defaultRole !== undefined ? { defaultRole: input.defaultRole } : {}),
          updatedAt: clock.now().toISOString(),
        };
        if (fresh.oidc && input.oidc) {
          next = {
            ...next,
            oidc: {
              issuer: issuer ?? fresh.oidc.issuer,
              clientId: input.oidc.clientId ?? fresh.oidc.clientId,
              scopes: input.oidc.scopes !== undefined ? scopesOf(input.oidc.scopes) : fresh.oidc.scopes,
            },
            clientSecret: input.oidc.clientSecret ?? fresh.clientSecret,
          };
        }
        if (fresh.saml && input.saml) {
          next = {
            ...next,
            saml: {
              ...fresh.saml,
              ...prepared.idp,
              ...(input.saml.nameIdFormat !== undefined ? { nameIdFormat: input.saml.nameIdFormat } : {}),
            },
            ...(input.saml.allowIdpInitiated !== undefined ? { allowIdpInitiated: input.saml.allowIdpInitiated } : {}),
            ...(relayState !== undefined ? { defaultRelayState: relayState } : {}),
          };
          checkSaml(next);
        }
        if (!(await tx.update(next))) throw notFound();
        await tx.evict(SIGN_IN_REALM_EVICTIONS);
        await tx.publish([event(next, 'updated', actor)]);
        await tx.audit?.([
          connectionEntry(SsoAuditActions.connectionUpdated.action, actor, next, { fields: changedFields(input) }),
        ]);
        return next;
      });
      return toResponse(updated);
    },

    async remove(actor, organizationId, id) {
      await authorize(actor, organizationId);
      const connectionId = key(id);
      await store.transaction(async (tx) => {
        const current = await tx.find(organizationId, connectionId);
        if (!current || !(await tx.delete(organizationId, connectionId))) throw notFound();
        await tx.evict(SIGN_IN_REALM_EVICTIONS);
        await tx.publish([event(current, 'deleted', actor)]);
        await tx.audit?.([connectionEntry(SsoAuditActions.connectionDeleted.action, actor, current)]);
      });
    },

    async setEnabled(actor, organizationId, id, enabled) {
      await authorize(actor, organizationId);
      const connectionId = key(id);
      const updated = await store.transaction(async (tx) => {
        const current = await tx.find(organizationId, connectionId);
        if (!current) throw notFound();
        if (current.enabled === enabled) return current;
        const next = { ...current, enabled, updatedAt: clock.now().toISOString() };
        if (!(await tx.update(next))) throw notFound();
        await tx.evict(SIGN_IN_REALM_EVICTIONS);
        await tx.publish([event(next, enabled ? 'enabled' : 'disabled', actor)]);
        await tx.audit?.([
          connectionEntry((enabled ? SsoAuditActions.connectionEnabled : SsoAuditActions.connectionDisabled).action, actor, next),
        ]);
        return next;
      });
      return toResponse(updated);
    },
  };
}
