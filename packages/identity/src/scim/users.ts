import { ScimError } from './errors.js';
import { ENTERPRISE_USER_SCHEMA, USER_SCHEMA } from './schemas.js';

/** The attributes kept only in the organization's SCIM record (never on the user account). */
export interface ScimUserAttributes {
  readonly displayName?: string;
  readonly nickName?: string;
  readonly title?: string;
  readonly userType?: string;
  readonly preferredLanguage?: string;
  readonly locale?: string;
  readonly timezone?: string;
  readonly formattedName?: string;
  readonly middleName?: string;
  readonly phoneNumbers?: ReadonlyArray<Record<string, unknown>>;
  readonly addresses?: ReadonlyArray<Record<string, unknown>>;
  /** The enterprise extension (RFC 7643 §4.3), as sent. */
  readonly enterprise?: Readonly<Record<string, unknown>>;
}

/**
 * A SCIM User of an organization: a member, with the SCIM attributes of that
 * organization. Its `email` is the user's (the account's) address; `active`
 * says whether the membership is active (`false`: suspended).
 */
export interface ScimUserRecord extends ScimUserInput {
  /** The user id (the same in every organization). */
  readonly id: string;
  /** ISO 8601 UTC. */
  readonly created: string;
  /** ISO 8601 UTC. */
  readonly lastModified: string;
  /** The organization's SCIM groups the user is in. */
  readonly groups: ReadonlyArray<{ readonly id: string; readonly displayName: string }>;
}

/** What a POST or PUT (or a PATCH, once applied) sets on a SCIM User. */
export interface ScimUserInput {
  readonly userName: string;
  readonly externalId: string | null;
  /** Lowercase. */
  readonly email: string;
  readonly givenName: string;
  readonly familyName: string;
  readonly active: boolean;
  readonly attributes: ScimUserAttributes;
}

/** Attributes a User body may carry; the rest is refused. `password` is accepted and ignored (see docs/scim.md). */
const KNOWN_USER_ATTRIBUTES = new Set(
  [
    'schemas',
    'id',
    'externalId',
    'meta',
    'userName',
    'name',
    'displayName',
    'nickName',
    'profileUrl',
    'title',
    'userType',
    'preferredLanguage',
    'locale',
    'timezone',
    'active',
    'password',
    'emails',
    'phoneNumbers',
    'ims',
    'photos',
    'addresses',
    'groups',
    'entitlements',
    'roles',
    'x509Certificates',
    ENTERPRISE_USER_SCHEMA,
  ].map((name) => name.toLowerCase()),
);

const ENTERPRISE_ATTRIBUTES = new Set(['employeenumber', 'costcenter', 'organization', 'division', 'department', 'manager']);

/** The root attribute names of the User schemas, lowercase, for checking PATCH paths. */
export function isKnownUserAttribute(name: string): boolean {
  return KNOWN_USER_ATTRIBUTES.has(name.toLowerCase());
}

const EMAIL = /^[^\s@]+@[^\s@]+$/;

function invalidValue(detail: string): ScimError {
  return new ScimError(400, detail, 'invalidValue');
}

/** A member of an object, found case-insensitively (SCIM attribute names are case-insensitive). */
function member(object: Record<string, unknown>, name: string): unknown {
  const lower = name.toLowerCase();
  for (const key of Object.keys(object)) if (key.toLowerCase() === lower) return object[key];
  return undefined;
}

function optionalString(value: unknown, field: string, max: number): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw invalidValue(`${field} must be a string.`);
  const trimmed = value.trim();
  if (trimmed.length > max) throw invalidValue(`${field} has at most ${max} characters.`);
  return trimmed === '' ? undefined : trimmed;
}

/**
 * A SCIM boolean: `true`/`false`, or the strings `"True"`/`"False"` that
 * Microsoft Entra ID sends in PATCH values.
 */
export function scimBoolean(value: unknown, field: string): boolean {
  if (typeof value === 'boolean') return value;
  if (typeof value === 'string' && /^(true|false)$/i.test(value.trim())) return value.trim().toLowerCase() === 'true';
  throw invalidValue(`${field} must be true or false.`);
}

function objectList(value: unknown, field: string): Array<Record<string, unknown>> | undefined {
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value) || value.some((item) => typeof item !== 'object' || item === null || Array.isArray(item))) {
    throw invalidValue(`${field} must be a list of objects.`);
  }
  if (value.length > 20) throw invalidValue(`${field} has at most 20 values.`);
  return value as Array<Record<string, unknown>>;
}

/** The address of a User body: the primary e-mail, else the `work` one, else the first, else a userName that is an address. */
function emailOf(body: Record<string, unknown>, userName: string): string {
  const emails = objectList(member(body, 'emails'), 'emails') ?? [];
  const chosen =
    emails.find((email) => member(email, 'primary') === true || member(email, 'primary') === 'true') ??
    emails.find((email) => String(member(email, 'type') ?? '').toLowerCase() === 'work') ??
    emails[0];
  const value = chosen ? optionalString(member(chosen, 'value'), 'emails.value', 254) : userName;
  if (!value || !EMAIL.test(value)) {
    throw invalidValue('A user needs an e-mail address: in emails (primary or work), or as the userName.');
  }
  return value.toLowerCase();
}

/** Checks the `schemas` member of a body. */
export function assertSchemas(body: Record<string, unknown>, required: string, allowed: readonly string[]): string[] {
  const schemas = member(body, 'schemas');
  if (!Array.isArray(schemas) || schemas.some((schema) => typeof schema !== 'string')) {
    throw new ScimError(400, `schemas must list ${required}.`, 'invalidSyntax');
  }
  const lower = schemas.map((schema: string) => schema.toLowerCase());
  if (!lower.includes(required.toLowerCase())) throw new ScimError(400, `schemas must list ${required}.`, 'invalidSyntax');
  const unknown = schemas.filter((schema: string) => !allowed.some((known) => known.toLowerCase() === schema.toLowerCase()));
  if (unknown.length > 0) throw new ScimError(400, `Unknown schema ${unknown.join(', ')}.`, 'invalidSyntax');
  return lower;
}

/**
 * Reads a User body (POST, PUT, or a resource after PATCH operations).
 *
 * @throws ScimError 400 `invalidSyntax` (schemas, unknown attribute), `invalidValue` (a value).
 */
export function parseUserInput(body: unknown): ScimUserInput {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new ScimError(400, 'The body must be a SCIM User object.', 'invalidSyntax');
  }
  const object = body as Record<string, unknown>;
  const schemas = assertSchemas(object, USER_SCHEMA, [USER_SCHEMA, ENTERPRISE_USER_SCHEMA]);
  for (const key of Object.keys(object)) {
    if (!KNOWN_USER_ATTRIBUTES.has(key.toLowerCase())) {
      throw new ScimError(400, `Unknown attribute "${key}" of a User.`, 'invalidSyntax');
    }
  }
  const userName = optionalString(member(object, 'userName'), 'userName', 254);
  if (!userName) throw invalidValue('userName is required.');
  const name = member(object, 'name');
  if (name !== undefined && name !== null && (typeof name !== 'object' || Array.isArray(name))) {
    throw invalidValue('name must be an object.');
  }
  const names = (name ?? {}) as Record<string, unknown>;
  const active = member(object, 'active');
  const enterprise = member(object, ENTERPRISE_USER_SCHEMA);
  if (enterprise !== undefined && enterprise !== null) {
    if (typeof enterprise !== 'object' || Array.isArray(enterprise))
      throw invalidValue('The enterprise extension must be an object.');
    if (!schemas.includes(ENTERPRISE_USER_SCHEMA.toLowerCase()) && Object.keys(enterprise).length > 0) {
      throw new ScimError(400, `schemas must list ${ENTERPRISE_USER_SCHEMA} to carry it.`, 'invalidSyntax');
    }
    for (const key of Object.keys(enterprise)) {
      if (!ENTERPRISE_ATTRIBUTES.has(key.toLowerCase())) {
        throw new ScimError(400, `Unknown attribute "${key}" of the enterprise extension.`, 'invalidSyntax');
      }
    }
  }
  const text = (field: string, max = 200) => optionalString(member(object, field), field, max);
  const enterpriseValues = enterprise ? enterpriseOf(enterprise as Record<string, unknown>) : undefined;
  const attributes: ScimUserAttributes = dropUndefined({
    displayName: text('displayName'),
    nickName: text('nickName'),
    title: text('title'),
    userType: text('userType'),
    preferredLanguage: text('preferredLanguage', 35),
    locale: text('locale', 35),
    timezone: text('timezone', 64),
    formattedName: optionalString(member(names, 'formatted'), 'name.formatted', 300),
    middleName: optionalString(member(names, 'middleName'), 'name.middleName', 100),
    phoneNumbers: objectList(member(object, 'phoneNumbers'), 'phoneNumbers'),
    addresses: objectList(member(object, 'addresses'), 'addresses'),
    enterprise: enterpriseValues && Object.keys(enterpriseValues).length > 0 ? enterpriseValues : undefined,
  });
  return {
    userName,
    externalId: optionalString(member(object, 'externalId'), 'externalId', 254) ?? null,
    email: emailOf(object, userName),
    givenName: optionalString(member(names, 'givenName'), 'name.givenName', 100) ?? '',
    familyName: optionalString(member(names, 'familyName'), 'name.familyName', 100) ?? '',
    active: active === undefined || active === null ? true : scimBoolean(active, 'active'),
    attributes,
  };
}

function enterpriseOf(enterprise: Record<string, unknown>): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  for (const key of ['employeeNumber', 'costCenter', 'organization', 'division', 'department']) {
    const value = optionalString(member(enterprise, key), key, 200);
    if (value !== undefined) values[key] = value;
  }
  const manager = member(enterprise, 'manager');
  if (manager !== undefined && manager !== null) {
    // Entra sends the manager as a bare id string in PATCH values.
    const value = typeof manager === 'string' ? manager : member(manager as Record<string, unknown>, 'value');
    const id = optionalString(value, 'manager.value', 254);
    if (id !== undefined) values.manager = { value: id };
  }
  return values;
}

function dropUndefined<T extends Record<string, unknown>>(object: T): T {
  for (const key of Object.keys(object)) if (object[key] === undefined) delete object[key];
  return object;
}

/** Sets `key` only when `value` is defined (no key at all for an absent attribute, and no `delete`). */
function put(object: Record<string, unknown>, key: string, value: unknown): void {
  if (value !== undefined) object[key] = value;
}

/** The SCIM representation of a User (RFC 7643 §4.1), `meta.location` under `base`. */
export function toScimUser(record: ScimUserRecord, base: string): Record<string, unknown> {
  const { attributes } = record;
  const location = `${base}/Users/${record.id}`;
  const formatted = attributes.formattedName ?? `${record.givenName} ${record.familyName}`.trim();
  const user: Record<string, unknown> = {
    schemas: attributes.enterprise ? [USER_SCHEMA, ENTERPRISE_USER_SCHEMA] : [USER_SCHEMA],
    id: record.id,
  };
  put(user, 'externalId', record.externalId ?? undefined);
  user.userName = record.userName;
  const name: Record<string, unknown> = {};
  put(name, 'formatted', formatted || undefined);
  put(name, 'givenName', record.givenName || undefined);
  put(name, 'familyName', record.familyName || undefined);
  put(name, 'middleName', attributes.middleName);
  user.name = name;
  put(user, 'displayName', attributes.displayName ?? (formatted || undefined));
  put(user, 'nickName', attributes.nickName);
  put(user, 'title', attributes.title);
  put(user, 'userType', attributes.userType);
  put(user, 'preferredLanguage', attributes.preferredLanguage);
  put(user, 'locale', attributes.locale);
  put(user, 'timezone', attributes.timezone);
  user.active = record.active;
  user.emails = [{ value: record.email, type: 'work', primary: true }];
  put(user, 'phoneNumbers', attributes.phoneNumbers);
  put(user, 'addresses', attributes.addresses);
  user.groups = record.groups.map((group) => ({
    value: group.id,
    display: group.displayName,
    $ref: `${base}/Groups/${group.id}`,
  }));
  put(user, ENTERPRISE_USER_SCHEMA, attributes.enterprise);
  user.meta = {
    resourceType: 'User',
    created: record.created,
    lastModified: record.lastModified,
    location,
    version: versionOf(record.lastModified),
  };
  return user;
}

/** A weak ETag of a resource, from its last modification. */
export function versionOf(lastModified: string): string {
  return `W/"${new Date(lastModified).getTime().toString(36)}"`;
}
