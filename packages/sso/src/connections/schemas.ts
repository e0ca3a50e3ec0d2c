import { z } from 'zod';
import { CONNECTION_KINDS } from './records.js';

/** Field limits of connections and domains. */
export const SSO_LIMITS = Object.freeze({
  name: 200,
  claimName: 256,
  group: 256,
  role: 64,
  roleMappings: 100,
  issuer: 2048,
  clientId: 256,
  clientSecret: 1024,
  scope: 100,
  scopes: 20,
  metadataUrl: 2048,
  nameIdFormat: 256,
  relayState: 1024,
  domain: 253,
});

const SINGLE_LINE = /^[^\p{Cc}]*$/u;

function line(label: string, max: number) {
  return z
    .string({ error: `Enter ${label}.` })
    .trim()
    .min(1, `Enter ${label}.`)
    .max(max, `Use at most ${max} characters.`)
    .regex(SINGLE_LINE, 'Remove control characters.');
}

const ClaimName = line('a claim or attribute name', SSO_LIMITS.claimName);

/** Which claim (OIDC) or attribute (SAML) carries each profile field; unknown fields are refused. */
export const AttributeMappingInput = z
  .strictObject({
    email: ClaimName.optional(),
    emailVerified: ClaimName.optional().describe('OIDC only: the claim asserting the address is verified.'),
    firstName: ClaimName.optional(),
    lastName: ClaimName.optional(),
    name: ClaimName.optional(),
    groups: ClaimName.optional().describe('The claim or attribute listing the groups the role table maps.'),
  })
  .describe('Replaces the mapping; fields left out take the default of the connection kind.');

/** A role name as identity stores it: lowercase. */
const RoleName = z
  .string({ error: 'Enter a role name.' })
  .trim()
  .toLowerCase()
  .min(1, 'Enter a role name.')
  .max(SSO_LIMITS.role, `A role name has at most ${SSO_LIMITS.role} characters.`)
  .regex(/^[a-z0-9][a-z0-9 _.-]*$/, 'Use a role name of the organization, such as user or admin.');

/** The group → role table of a connection, re-applied at every sign-in. */
export const RoleMappingInput = z
  .array(z.strictObject({ group: line('a group', SSO_LIMITS.group), role: RoleName }), {
    error: 'roleMapping is a list of { group, role }.',
  })
  .max(SSO_LIMITS.roleMappings, `Map at most ${SSO_LIMITS.roleMappings} groups.`);

const Scope = z
  .string({ error: 'A scope is text.' })
  .min(1)
  .max(SSO_LIMITS.scope)
  .regex(/^[\x21\x23-\x5B\x5D-\x7E]+$/, 'A scope is one token without spaces or quotes.');

const Url = (label: string, max: number) => line(label, max);

/** The `oidc` object of a new OIDC connection. */
export const OidcConfigInput = z.strictObject({
  issuer: Url('the issuer URL', SSO_LIMITS.issuer).describe('The upstream issuer; discovery is read from it.'),
  clientId: line('the client id', SSO_LIMITS.clientId),
  clientSecret: z
    .string({ error: 'Enter the client secret.' })
    .min(1, 'Enter the client secret.')
    .max(SSO_LIMITS.clientSecret, `Use at most ${SSO_LIMITS.clientSecret} characters.`)
    .regex(SINGLE_LINE, 'Remove control characters.')
    .describe('Sealed at rest and never returned (`clientSecretSet` says it is there).'),
  scopes: z
    .array(Scope, { error: 'scopes is a list of scope names.' })
    .max(SSO_LIMITS.scopes)
    .optional()
    .describe('Default `openid email profile`; `openid` is always added.'),
});

/** The `oidc` object of an update: every field optional; an absent `clientSecret` keeps the current one. */
export const OidcConfigPatch = OidcConfigInput.partial();

const samlFields = {
  metadataXml: z
    .string({ error: 'metadataXml is the XML text.' })
    .min(1, 'Paste the metadata XML.')
    .describe('The identity provider metadata XML (no DOCTYPE); give this or `metadataUrl`.'),
  metadataUrl: Url('the metadata URL', SSO_LIMITS.metadataUrl).describe(
    'Where the identity provider publishes its metadata (https); fetched now, within 5 seconds and 1 MiB.',
  ),
  nameIdFormat: line('a NameID format', SSO_LIMITS.nameIdFormat).nullable(),
  allowIdpInitiated: z
    .boolean({ error: 'allowIdpInitiated is true or false.' })
    .describe('Accept sign-ins the identity provider starts; needs `defaultRelayState`. Off by default.'),
  defaultRelayState: line('a path', SSO_LIMITS.relayState)
    .nullable()
    .describe('Where an IdP-initiated sign-in lands: a path on this server, such as `/account`.'),
};

const oneMetadataSource = (body: { metadataXml?: string | undefined; metadataUrl?: string | undefined }) =>
  !(body.metadataXml !== undefined && body.metadataUrl !== undefined);

/** The `saml` object of a new SAML connection: exactly one of `metadataXml` and `metadataUrl`. */
export const SamlConfigInput = z
  .strictObject({
    metadataXml: samlFields.metadataXml.optional(),
    metadataUrl: samlFields.metadataUrl.optional(),
    nameIdFormat: samlFields.nameIdFormat.optional(),
    allowIdpInitiated: samlFields.allowIdpInitiated.optional(),
    defaultRelayState: samlFields.defaultRelayState.optional(),
  })
  .refine(oneMetadataSource, { message: 'Give metadataXml or metadataUrl, not both.' })
  .refine((body) => body.metadataXml !== undefined || body.metadataUrl !== undefined, {
    message: 'Give the identity provider metadata: metadataXml or metadataUrl.',
  });

/** The `saml` object of an update: every field optional; new metadata replaces the identity provider's details. */
export const SamlConfigPatch = z
  .strictObject({
    metadataXml: samlFields.metadataXml.optional(),
    metadataUrl: samlFields.metadataUrl.optional(),
    nameIdFormat: samlFields.nameIdFormat.optional(),
    allowIdpInitiated: samlFields.allowIdpInitiated.optional(),
    defaultRelayState: samlFields.defaultRelayState.optional(),
  })
  .refine(oneMetadataSource, { message: 'Give metadataXml or metadataUrl, not both.' });

const common = {
  name: line('a name', SSO_LIMITS.name).describe('Shown on the sign-in page, e.g. "Acme Okta".'),
  enabled: z.boolean({ error: 'enabled is true or false.' }).optional().describe('Off by default: enable once tested.'),
  attributeMapping: AttributeMappingInput.optional(),
  roleMapping: RoleMappingInput.optional(),
  defaultRole: RoleName.optional().describe(
    'Organization connections: the role of a just-in-time member (default `user`). Not for platform connections.',
  ),
};

/** The body of a connection creation: `kind` decides whether `oidc` or `saml` is given; unknown fields are refused. */
export const CreateConnectionInput = z.discriminatedUnion(
  'kind',
  [
    z.strictObject({ kind: z.literal('oidc'), ...common, oidc: OidcConfigInput }),
    z.strictObject({ kind: z.literal('saml'), ...common, saml: SamlConfigInput }),
  ],
  { error: `kind is ${CONNECTION_KINDS.join(' or ')}.` },
);

/** A validated creation. */
export type CreateConnectionInput = z.output<typeof CreateConnectionInput>;

/**
 * The body of a connection update: the fields to change (the kind never
 * changes; `oidc` for a SAML connection or `saml` for an OIDC one is refused).
 */
export const UpdateConnectionInput = z
  .strictObject({
    name: common.name.optional(),
    attributeMapping: AttributeMappingInput.optional(),
    roleMapping: RoleMappingInput.optional(),
    defaultRole: RoleName.optional(),
    oidc: OidcConfigPatch.optional(),
    saml: SamlConfigPatch.optional(),
  })
  .refine((body) => Object.values(body).some((value) => value !== undefined), { message: 'Give at least one field to change.' });

/** A validated update. */
export type UpdateConnectionInput = z.output<typeof UpdateConnectionInput>;

const timestamp = z.string().meta({ format: 'date-time', description: 'ISO 8601 UTC' });

/** A signing certificate of an identity provider, as the API shows it. */
export const CertificateSummary = z.object({
  fingerprintSha256: z.string().describe('Colon-separated hex, as the X.509 tools print it.'),
  subject: z.string(),
  notAfter: z.string().describe('When the certificate expires.'),
});

/** A connection as the API answers it: secrets never, `clientSecretSet` instead. */
export const ConnectionResponse = z.object({
  id: z.string().meta({ format: 'uuid' }),
  organizationId: z.string().nullable().describe('`null` for a platform connection.'),
  kind: z.enum(CONNECTION_KINDS),
  name: z.string(),
  enabled: z.boolean(),
  attributeMapping: z.record(z.string(), z.string()),
  roleMapping: z.array(z.object({ group: z.string(), role: z.string() })),
  defaultRole: z.string().nullable(),
  oidc: z
    .object({
      issuer: z.string(),
      clientId: z.string(),
      clientSecretSet: z.boolean(),
      scopes: z.array(z.string()),
      redirectUri: z.string().describe('Register this callback at the upstream provider.'),
    })
    .nullable(),
  saml: z
    .object({
      idpEntityId: z.string(),
      idpSsoUrl: z.string(),
      idpCertificates: z.array(CertificateSummary),
      metadataUrl: z.string().nullable(),
      nameIdFormat: z.string().nullable(),
      allowIdpInitiated: z.boolean(),
      defaultRelayState: z.string().nullable(),
      spEntityId: z.string().describe('This service provider’s entity id (the Audience): give it to the IdP.'),
      acsUrl: z.string().describe('The assertion consumer service URL (HTTP-POST): give it to the IdP.'),
      spMetadataUrl: z.string().describe('This service provider’s metadata, for IdPs that import it.'),
    })
    .nullable(),
  createdAt: timestamp,
  updatedAt: timestamp,
});

/** A connection response. */
export type ConnectionResponse = z.output<typeof ConnectionResponse>;

/** The body of `POST …/domains`. */
export const AddDomainInput = z.strictObject({
  domain: line('a domain name', SSO_LIMITS.domain).describe(
    'Such as example.com; internationalised names are stored as punycode.',
  ),
});

/** A validated domain addition. */
export type AddDomainInput = z.output<typeof AddDomainInput>;

/** A domain as the API answers it, with the TXT record that proves control of it. */
export const DomainResponse = z.object({
  id: z.string().meta({ format: 'uuid' }),
  organizationId: z.string(),
  domain: z.string(),
  verified: z.boolean(),
  verifiedAt: timestamp.nullable(),
  verification: z.object({
    type: z.literal('TXT'),
    name: z.string().describe('Publish the record at the domain itself (its apex).'),
    value: z.string().describe('`idt-verification=…`'),
  }),
  createdAt: timestamp,
});

/** A domain response. */
export type DomainResponse = z.output<typeof DomainResponse>;
