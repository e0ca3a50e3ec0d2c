/** The two kinds of upstream identity provider a connection speaks to. */
export const CONNECTION_KINDS = ['oidc', 'saml'] as const;

/** `oidc` (an OpenID provider, by issuer discovery) or `saml` (a SAML 2.0 identity provider). */
export type ConnectionKind = (typeof CONNECTION_KINDS)[number];

/**
 * Which claim (OIDC) or attribute (SAML) carries each profile field. An
 * absent entry means the field is not read from the provider.
 */
export interface AttributeMapping {
  readonly email?: string;
  readonly emailVerified?: string;
  readonly firstName?: string;
  readonly lastName?: string;
  readonly name?: string;
  readonly groups?: string;
}

/** One row of a connection's role table: members of `group` at the provider get `role` in the organization. */
export interface RoleMappingEntry {
  readonly group: string;
  readonly role: string;
}

/** What an OIDC connection stores besides its secret. */
export interface OidcConnectionConfig {
  /** The upstream issuer; its discovery document is at `{issuer}/.well-known/openid-configuration`. */
  readonly issuer: string;
  readonly clientId: string;
  /** Scopes asked for; always includes `openid`. */
  readonly scopes: readonly string[];
}

/** What a SAML connection stores: the identity provider as its metadata described it. */
export interface SamlConnectionConfig {
  readonly idpEntityId: string;
  /** HTTP-Redirect single sign-on URL. */
  readonly idpSsoUrl: string;
  /** Signing certificates, PEM. */
  readonly idpCertificates: readonly string[];
  /** Where the metadata was fetched from, when it came from a URL. */
  readonly metadataUrl: string | null;
  readonly nameIdFormat: string | null;
  readonly wantAuthnRequestsSigned: boolean;
}

/**
 * A connection as the service works with it. `clientSecret` is the opened
 * secret of an OIDC connection: the store seals it at rest and no answer
 * of the API ever carries it.
 */
export interface ConnectionRecord {
  readonly id: string;
  /** The owning organization; `null` for a platform connection (a "Continue with …" button for everyone). */
  readonly organizationId: string | null;
  readonly kind: ConnectionKind;
  readonly name: string;
  readonly enabled: boolean;
  readonly oidc: OidcConnectionConfig | null;
  readonly saml: SamlConnectionConfig | null;
  readonly clientSecret: string | null;
  readonly attributeMapping: AttributeMapping;
  readonly roleMapping: readonly RoleMappingEntry[];
  /** The role a just-in-time member gets when no group maps; `null` for platform connections. */
  readonly defaultRole: string | null;
  /** SAML: accept IdP-initiated responses (off by default). */
  readonly allowIdpInitiated: boolean;
  /** SAML: where an IdP-initiated sign-in lands, a same-origin path. */
  readonly defaultRelayState: string | null;
  readonly createdAt: string;
  readonly updatedAt: string;
}

/** A domain an organization claims, and whether it proved control of it. */
export interface DomainRecord {
  readonly id: string;
  readonly organizationId: string;
  /** Normalised: lowercase, punycode. */
  readonly domain: string;
  /** The TXT record value to publish: `idt-verification=…`. */
  readonly token: string;
  readonly verifiedAt: string | null;
  readonly createdAt: string;
}

/** A user's identity at one connection: `(connectionId, subject)` is its key, never the e-mail alone. */
export interface SsoIdentityRecord {
  readonly connectionId: string;
  /** The OIDC `sub` or the SAML NameID. */
  readonly subject: string;
  readonly userId: string;
  readonly email: string | null;
  readonly createdAt: string;
  readonly lastSignInAt: string | null;
}
