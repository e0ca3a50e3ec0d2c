import type { AttributeMapping, RoleMappingEntry } from './records.js';
import { SSO_LIMITS } from './schemas.js';

/** The profile fields a sign-in reads from an upstream provider's claims or attributes. */
export interface MappedProfile {
  /** The address, trimmed; `null` when absent or not an address. */
  readonly email: string | null;
  readonly firstName: string | null;
  readonly lastName: string | null;
  /** The display name, when the provider sends one. */
  readonly name: string | null;
  /** The groups the role table maps, deduplicated, in the provider's order. */
  readonly groups: readonly string[];
}

/** The longest name kept from a provider. */
export const MAX_MAPPED_NAME_LENGTH = 200;
/** At most this many groups are read from one sign-in. */
export const MAX_MAPPED_GROUPS = 500;

/** The claims read when a mapping names none: the OpenID Connect standard claims and a `groups` claim. */
const OIDC_DEFAULTS = {
  email: 'email',
  firstName: 'given_name',
  lastName: 'family_name',
  name: 'name',
  groups: 'groups',
} as const;

const WS_CLAIMS = 'http://schemas.xmlsoap.org/ws/2005/05/identity/claims';

/**
 * The attribute names tried for each field of a SAML assertion, after the
 * connection's own: the short names Okta, Keycloak and Google Workspace are
 * usually set up with, the WS-Federation claim URIs Microsoft Entra ID (and
 * AD FS) send by default, and the LDAP/eduPerson OIDs.
 */
export const SAML_ATTRIBUTE_FALLBACKS: Readonly<Record<keyof typeof OIDC_DEFAULTS, readonly string[]>> = Object.freeze({
  email: ['email', 'mail', 'emailAddress', `${WS_CLAIMS}/emailaddress`, 'urn:oid:0.9.2342.19200300.100.1.3'],
  firstName: ['firstName', 'givenName', 'given_name', `${WS_CLAIMS}/givenname`, 'urn:oid:2.5.4.42'],
  lastName: ['lastName', 'surname', 'sn', 'family_name', `${WS_CLAIMS}/surname`, 'urn:oid:2.5.4.4'],
  name: [
    'displayName',
    'name',
    `${WS_CLAIMS}/name`,
    'http://schemas.microsoft.com/identity/claims/displayname',
    'urn:oid:2.16.840.1.113730.3.1.241',
  ],
  groups: ['groups', 'memberOf', 'http://schemas.microsoft.com/ws/2008/06/identity/claims/groups', `${WS_CLAIMS}/groups`],
});

/** The attributes a SAML connection stores as its defaults (see `DEFAULT_SAML_MAPPING`). */
const SAML_STORED_DEFAULTS: Readonly<Record<keyof typeof OIDC_DEFAULTS, string>> = {
  email: 'email',
  firstName: 'firstName',
  lastName: 'lastName',
  name: 'displayName',
  groups: 'groups',
};

// Control characters never reach a user record.
const CONTROL = /\p{Cc}/gu;

function cleanText(value: unknown, max: number): string | null {
  if (typeof value !== 'string') return null;
  const text = value.replace(CONTROL, '').trim();
  return text.length > 0 && text.length <= max ? text : null;
}

function cleanEmail(value: unknown): string | null {
  const text = cleanText(value, 254);
  if (!text) return null;
  return /^[^\s@]+@[^\s@]+$/.test(text) ? text : null;
}

function cleanGroups(values: readonly unknown[]): string[] {
  const groups = new Set<string>();
  for (const value of values) {
    const group = cleanText(typeof value === 'number' ? String(value) : value, SSO_LIMITS.group);
    if (group) groups.add(group);
    if (groups.size >= MAX_MAPPED_GROUPS) break;
  }
  return [...groups];
}

function first(value: unknown): unknown {
  return Array.isArray(value) ? value[0] : value;
}

/**
 * Reads the profile from an OpenID provider's claims (id token and
 * userinfo merged) by a connection's mapping; a field the mapping leaves
 * out reads its standard claim (`email`, `given_name`, `family_name`,
 * `name`, `groups`). The groups claim may be a list or one string. Values
 * that are not text, too long, or (for the e-mail) not an address are left
 * out, never guessed.
 *
 * @example
 * mapUpstreamClaims({ email: 'ada@example.com', given_name: 'Ada', groups: ['eng'] }, {});
 * // { email: 'ada@example.com', firstName: 'Ada', lastName: null, name: null, groups: ['eng'] }
 */
export function mapUpstreamClaims(claims: Readonly<Record<string, unknown>>, mapping: AttributeMapping = {}): MappedProfile {
  const read = (field: keyof typeof OIDC_DEFAULTS) => claims[mapping[field] ?? OIDC_DEFAULTS[field]];
  const groups = read('groups');
  return {
    email: cleanEmail(first(read('email'))),
    firstName: cleanText(first(read('firstName')), MAX_MAPPED_NAME_LENGTH),
    lastName: cleanText(first(read('lastName')), MAX_MAPPED_NAME_LENGTH),
    name: cleanText(first(read('name')), MAX_MAPPED_NAME_LENGTH),
    groups: Array.isArray(groups) ? cleanGroups(groups) : groups === undefined ? [] : cleanGroups([groups]),
  };
}

/**
 * Reads the profile from a SAML assertion's attributes (every value as
 * text, by attribute `Name`) by a connection's mapping. A field whose
 * mapping is absent or the stored default also tries the common names of
 * {@link SAML_ATTRIBUTE_FALLBACKS} (such as Entra ID's
 * `http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress` and
 * `http://schemas.microsoft.com/ws/2008/06/identity/claims/groups`); a
 * mapping an administrator changed is read alone. Names are compared
 * exactly. The e-mail does not fall back to the NameID: the caller decides
 * that from the NameID format.
 *
 * @example
 * mapSamlAttributes({ 'http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress': ['ada@example.com'] }, {});
 * // { email: 'ada@example.com', firstName: null, lastName: null, name: null, groups: [] }
 */
export function mapSamlAttributes(
  attributes: Readonly<Record<string, readonly string[]>>,
  mapping: AttributeMapping = {},
): MappedProfile {
  const namesOf = (field: keyof typeof OIDC_DEFAULTS): string[] => {
    const configured = mapping[field];
    if (configured !== undefined && configured !== SAML_STORED_DEFAULTS[field]) return [configured];
    return [...new Set([...(configured ? [configured] : []), ...SAML_ATTRIBUTE_FALLBACKS[field]])];
  };
  const values = (field: keyof typeof OIDC_DEFAULTS): readonly string[] => {
    for (const name of namesOf(field)) {
      const found = Object.hasOwn(attributes, name) ? attributes[name] : undefined;
      if (found && found.length > 0) return found;
    }
    return [];
  };
  const single = (field: keyof typeof OIDC_DEFAULTS) => values(field).find((value) => value.trim() !== '');
  return {
    email: cleanEmail(single('email')),
    firstName: cleanText(single('firstName'), MAX_MAPPED_NAME_LENGTH),
    lastName: cleanText(single('lastName'), MAX_MAPPED_NAME_LENGTH),
    name: cleanText(single('name'), MAX_MAPPED_NAME_LENGTH),
    groups: cleanGroups(values('groups')),
  };
}

/**
 * The roles a connection's group table gives: every entry whose `group` is
 * one of `groups` (compared exactly), in the table's order without
 * duplicates; `defaultRole` alone when none maps; nothing when there is no
 * default either (platform connections).
 *
 * @example
 * rolesForGroups(['eng', 'admins'], [{ group: 'admins', role: 'admin' }], 'user'); // ['admin']
 * rolesForGroups(['eng'], [{ group: 'admins', role: 'admin' }], 'user'); // ['user']
 */
export function rolesForGroups(
  groups: readonly string[],
  roleMapping: readonly RoleMappingEntry[],
  defaultRole: string | null,
): string[] {
  const member = new Set(groups);
  const roles = [...new Set(roleMapping.filter((entry) => member.has(entry.group)).map((entry) => entry.role))];
  if (roles.length > 0) return roles;
  return defaultRole ? [defaultRole] : [];
}
