import { isUuid } from '@idt/core';
import { ScimError } from './errors.js';
import { GROUP_SCHEMA } from './schemas.js';
import { assertSchemas, versionOf } from './users.js';

/** A SCIM Group of an organization. */
export interface ScimGroupRecord {
  readonly id: string;
  readonly displayName: string;
  readonly externalId: string | null;
  /** ISO 8601 UTC. */
  readonly created: string;
  /** ISO 8601 UTC. */
  readonly lastModified: string;
  /** Member user ids with their display names; `undefined` when not read (`excludedAttributes=members`). */
  readonly members?: ReadonlyArray<{ readonly id: string; readonly display: string }>;
}

/** What a POST or PUT (or a PATCH, once applied) sets on a Group. */
export interface ScimGroupInput {
  readonly displayName: string;
  readonly externalId: string | null;
  /** Lowercase user ids. */
  readonly memberIds: readonly string[];
}

const KNOWN_GROUP_ATTRIBUTES = new Set(['schemas', 'id', 'externalid', 'meta', 'displayname', 'members']);

/** Whether a root attribute name belongs to the Group schema (for PATCH paths). */
export function isKnownGroupAttribute(name: string): boolean {
  return KNOWN_GROUP_ATTRIBUTES.has(name.toLowerCase());
}

/** The most members one group request may carry. */
export const MAX_GROUP_MEMBERS = 10_000;

/**
 * Reads a Group body.
 *
 * @throws ScimError 400 `invalidSyntax` (schemas, unknown attribute), `invalidValue` (a value).
 */
export function parseGroupInput(body: unknown): ScimGroupInput {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new ScimError(400, 'The body must be a SCIM Group object.', 'invalidSyntax');
  }
  const object = body as Record<string, unknown>;
  assertSchemas(object, GROUP_SCHEMA, [GROUP_SCHEMA]);
  const get = (name: string) => {
    for (const key of Object.keys(object)) if (key.toLowerCase() === name) return object[key];
    return undefined;
  };
  for (const key of Object.keys(object)) {
    if (!KNOWN_GROUP_ATTRIBUTES.has(key.toLowerCase())) {
      throw new ScimError(400, `Unknown attribute "${key}" of a Group.`, 'invalidSyntax');
    }
  }
  const displayName = get('displayname');
  if (typeof displayName !== 'string' || displayName.trim() === '' || displayName.trim().length > 200) {
    throw new ScimError(400, 'displayName is required (at most 200 characters).', 'invalidValue');
  }
  const externalId = get('externalid');
  if (externalId !== undefined && externalId !== null && (typeof externalId !== 'string' || externalId.length > 254)) {
    throw new ScimError(400, 'externalId must be a string of at most 254 characters.', 'invalidValue');
  }
  const members = get('members') ?? [];
  if (!Array.isArray(members)) throw new ScimError(400, 'members must be a list.', 'invalidValue');
  if (members.length > MAX_GROUP_MEMBERS) {
    throw new ScimError(400, `A group request carries at most ${MAX_GROUP_MEMBERS} members.`, 'invalidValue');
  }
  const memberIds = new Set<string>();
  for (const item of members) {
    const value = typeof item === 'object' && item !== null ? (item as Record<string, unknown>).value : undefined;
    if (typeof value !== 'string' || !isUuid(value)) {
      throw new ScimError(400, 'Every member needs the id of a User of this organization as its value.', 'invalidValue');
    }
    memberIds.add(value.toLowerCase());
  }
  return {
    displayName: displayName.trim(),
    externalId: typeof externalId === 'string' && externalId.trim() !== '' ? externalId.trim() : null,
    memberIds: [...memberIds],
  };
}

/** The SCIM representation of a Group (RFC 7643 §4.2). */
export function toScimGroup(record: ScimGroupRecord, base: string): Record<string, unknown> {
  return {
    schemas: [GROUP_SCHEMA],
    id: record.id,
    ...(record.externalId ? { externalId: record.externalId } : {}),
    displayName: record.displayName,
    ...(record.members
      ? {
          members: record.members.map((member) => ({
            value: member.id,
            display: member.display,
            type: 'User',
            $ref: `${base}/Users/${member.id}`,
          })),
        }
      : {}),
    meta: {
      resourceType: 'Group',
      created: record.created,
      lastModified: record.lastModified,
      location: `${base}/Groups/${record.id}`,
      version: versionOf(record.lastModified),
    },
  };
}
