import { type ScimPatchOperation, type ScimResource, scimPatch } from 'scim-patch';
import { ScimError } from './errors.js';
import { PATCH_OP_SCHEMA } from './schemas.js';

/** The most operations one PATCH request may carry. */
const MAX_OPERATIONS = 1000;

/**
 * Reads a PatchOp body (RFC 7644 §3.5.2) into operations `scim-patch`
 * applies, accepting what Microsoft Entra ID and Okta send: capitalised `op`
 * names (`Replace`), and `"True"`/`"False"` for `active`, with or without a path.
 *
 * @param isKnownAttribute whether a root attribute (or an extension URN) belongs to the resource.
 * @throws ScimError 400 `invalidSyntax` for a malformed body, `invalidPath` for an unknown attribute.
 */
export function parsePatchOperations(body: unknown, isKnownAttribute: (name: string) => boolean): ScimPatchOperation[] {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    throw new ScimError(400, 'The body must be a PatchOp object.', 'invalidSyntax');
  }
  const object = body as Record<string, unknown>;
  const schemas = object.schemas;
  if (
    !Array.isArray(schemas) ||
    !schemas.some((schema) => typeof schema === 'string' && schema.toLowerCase() === PATCH_OP_SCHEMA.toLowerCase())
  ) {
    throw new ScimError(400, `schemas must list ${PATCH_OP_SCHEMA}.`, 'invalidSyntax');
  }
  const operations = object.Operations ?? object.operations;
  if (!Array.isArray(operations) || operations.length === 0) {
    throw new ScimError(400, 'Operations must list at least one operation.', 'invalidSyntax');
  }
  if (operations.length > MAX_OPERATIONS) throw new ScimError(400, `At most ${MAX_OPERATIONS} operations.`, 'invalidSyntax');
  return operations.map((operation, index) => normalizeOperation(operation, index, isKnownAttribute));
}

function normalizeOperation(raw: unknown, index: number, isKnownAttribute: (name: string) => boolean): ScimPatchOperation {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new ScimError(400, `Operations[${index}] must be an object.`, 'invalidSyntax');
  }
  const { op, path, value } = raw as { op?: unknown; path?: unknown; value?: unknown };
  const name = typeof op === 'string' ? op.toLowerCase() : '';
  if (name !== 'add' && name !== 'replace' && name !== 'remove') {
    throw new ScimError(400, `Operations[${index}].op must be add, replace or remove.`, 'invalidSyntax');
  }
  if (path !== undefined && (typeof path !== 'string' || path.trim() === '')) {
    throw new ScimError(400, `Operations[${index}].path must be a non-empty string.`, 'invalidPath');
  }
  if (name === 'remove') {
    if (path === undefined) throw new ScimError(400, `Operations[${index}]: remove needs a path.`, 'noTarget');
    assertKnownPath(path as string, isKnownAttribute);
    return { op: 'remove', path: path as string, ...(value !== undefined ? { value } : {}) } as ScimPatchOperation;
  }
  if (value === undefined) throw new ScimError(400, `Operations[${index}]: ${name} needs a value.`, 'invalidSyntax');
  if (path === undefined) {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      throw new ScimError(400, `Operations[${index}]: without a path the value must be an object.`, 'invalidSyntax');
    }
    const values: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value as Record<string, unknown>)) {
      assertKnownPath(key, isKnownAttribute);
      values[key] = key.toLowerCase() === 'active' ? activeValue(item) : item;
    }
    return { op: name, value: values } as ScimPatchOperation;
  }
  assertKnownPath(path as string, isKnownAttribute);
  const normalized = (path as string).toLowerCase() === 'active' ? activeValue(value) : value;
  return { op: name, path: path as string, value: normalized } as ScimPatchOperation;
}

/** Entra's `"False"` as a boolean; anything else is left for validation. */
function activeValue(value: unknown): unknown {
  return typeof value === 'string' && /^(true|false)$/i.test(value.trim()) ? value.trim().toLowerCase() === 'true' : value;
}

/**
 * The root attribute of a path must be known: `name.givenName`,
 * `emails[type eq "work"].value`, `urn:…:enterprise:2.0:User:department`
 * (an extension URN, optionally with an attribute after it).
 */
function assertKnownPath(path: string, isKnownAttribute: (name: string) => boolean): void {
  const trimmed = path.trim();
  if (trimmed.toLowerCase().startsWith('urn:')) {
    const extension = isKnownAttribute(trimmed) ? trimmed : trimmed.slice(0, trimmed.lastIndexOf(':'));
    if (isKnownAttribute(extension)) return;
    // A core schema URN before a core attribute (`urn:…:core:2.0:User:userName`).
    const attribute = trimmed.slice(trimmed.lastIndexOf(':') + 1).split(/[.[]/)[0] ?? '';
    if (/^urn:ietf:params:scim:schemas:core:2\.0:(user|group)$/i.test(extension) && isKnownAttribute(attribute)) return;
    throw new ScimError(400, `Unknown attribute "${path}".`, 'invalidPath');
  }
  const root = trimmed.split(/[.[]/)[0] ?? '';
  if (!isKnownAttribute(root)) throw new ScimError(400, `Unknown attribute "${path}".`, 'invalidPath');
}

/**
 * Applies operations to a copy of a SCIM resource with `scim-patch`.
 *
 * @throws ScimError 400 with the `scimType` scim-patch names (`noTarget`, `invalidSyntax`, …).
 */
export function applyPatch<T extends Record<string, unknown>>(resource: T, operations: ScimPatchOperation[]): T {
  try {
    return scimPatch(resource as unknown as ScimResource, operations, {
      mutateDocument: false,
      treatMissingAsAdd: true,
    }) as unknown as T;
  } catch (error) {
    if (error instanceof ScimError) throw error;
    // scim-patch errors name their scimType; anything else it throws comes from a value it could not apply.
    const scimType = (error as { scimCode?: string }).scimCode ?? 'invalidValue';
    throw new ScimError(400, (error as Error).message, scimType as ScimError['scimType']);
  }
}
