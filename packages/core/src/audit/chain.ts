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
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value ?? null);
  if (Array.isArray(value)) return `[${value.map((item) => canonicalJson(item)).join(',')}]`;
  const keys = Object.keys(value as Record<string, unknown>)
    .filter((key) => (value as Record<string, unknown>)[key] !== undefined)
    .sort();
  return `{${keys.map((key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`).join(',')}}`;
}

/** What a record's hash covers: everything but the hashes themselves. */
export type HashedAuditFields = Omit<AuditRecord, 'hash' | 'prevHash'>;

/** The canonical form of a record, as hashed (version 1). */
export function canonicalAuditRecord(record: HashedAuditFields): string {
  return canonicalJson({
    v: 1,
    id: record.id,
    sequence: record.sequence,
    occurredAt: record.occurredAt,
    organizationId: record.organizationId,
    actor: record.actor,
    action: record.action,
    target: record.target,
    outcome: record.outcome,
    ip: record.ip,
    userAgent: record.userAgent,
    traceId: record.traceId,
    metadata: record.metadata,
  });
}

/** SHA-256 (hex) over `prevHash`, a newline and the record's canonical form. */
export function hashAuditRecord(record: HashedAuditFields, prevHash: string): string {
  return createHash('sha256').update(prevHash).update('\n').update(canonicalAuditRecord(record)).digest('hex');
}
