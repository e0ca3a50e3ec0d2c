import { createHash } from 'node:crypto';
import type { AuditRecord } from './entry.js';

/** The `prev_hash` of the first record of a chain. */
export const GENESIS_HASH = '0'.repeat(64);

/** The chain key of the platform trail (organization `null`); organization chains use the organization id. */
export const PLATFORM_CHAIN = 'platform';

/** The chain an organization's records belong to. */
export function chainOf(organizationId: string | null): string {
  return organizationId ?? PLATFORM_CHAIN;
}

/**
 * JSON with object keys in code-unit order at every depth: the same value
 * always serializes to the same text, whatever order its keys were built in.
 * (Written with loops, and keys sorted only when they are not already: it
 * runs for every record a verification checks.)
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value ?? null);
  if (Array.isArray(value)) {
    let text = '[';
    for (let index = 0; index < value.length; index++) {
      if (index > 0) text += ',';
      // A hole stays empty, as `map` and `join` leave it.
      if (index in value) text += canonicalJson(value[index]);
    }
    return `${text}]`;
  }
  const object = value as Record<string, unknown>;
  const keys = sortKeys(Object.keys(object));
  let text = '{';
  let first = true;
  for (const key of keys) {
    const item = object[key];
    if (item === undefined) continue;
    text += `${first ? '' : ','}${JSON.stringify(key)}:${canonicalJson(item)}`;
    first = false;
  }
  return `${text}}`;
}

/** Sorts keys in place in code-unit order (what `Array.prototype.sort` does with strings), without a copy when short. */
function sortKeys(keys: string[]): string[] {
  if (keys.length > 16) return keys.sort();
  for (let index = 1; index < keys.length; index++) {
    const key = keys[index] as string;
    let at = index - 1;
    while (at >= 0 && (keys[at] as string) > key) {
      keys[at + 1] = keys[at] as string;
      at--;
    }
    keys[at + 1] = key;
  }
  return keys;
}

/** What a record's hash covers: everything but the hashes themselves. */
export type HashedAuditFields = Omit<AuditRecord, 'hash' | 'prevHash'>;

/** The canonical form of a record, as hashed (version 1). */
export function canonicalAuditRecord(record: HashedAuditFields): string {
  // Built in key order already, so that nothing is sorted at this level.
  return canonicalJson({
    action: record.action,
    actor: record.actor,
    id: record.id,
    ip: record.ip,
    metadata: record.metadata,
    occurredAt: record.occurredAt,
    organizationId: record.organizationId,
    outcome: record.outcome,
    sequence: record.sequence,
    target: record.target,
    traceId: record.traceId,
    userAgent: record.userAgent,
    v: 1,
  });
}

/** SHA-256 (hex) over `prevHash`, a newline and the record's canonical form. */
export function hashAuditRecord(record: HashedAuditFields, prevHash: string): string {
  return createHash('sha256').update(prevHash).update('\n').update(canonicalAuditRecord(record)).digest('hex');
}
