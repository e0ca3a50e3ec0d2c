import type { Principal } from '../auth/principal.js';
import type { Env } from '../config/env.js';
import { envReader } from '../config/env.js';
import type { EnvironmentVariable } from '../module.js';
import type { HeaderReader } from '../request-head.js';
import type { AuditActor } from './entry.js';
import { DEFAULT_AUDIT_RETENTION_DAYS } from './trail.js';

/**
 * The actor of an authenticated request: a user (interactive token or
 * session), a service account, or an API key (named by its id).
 *
 * @example
 * await ctx.audit.record({ action, organizationId, actor: auditActorOf(route.principal), ...auditRequestOf(route) }, trx);
 */
export function auditActorOf(principal: Principal): AuditActor {
  if (principal.kind === 'apiKey') {
    return { type: 'apiKey', id: principal.credentialId ?? principal.subject, display: principal.name };
  }
  if (principal.kind === 'service')
    return { type: 'service', id: principal.clientId ?? principal.subject, display: principal.name };
  return { type: 'user', id: principal.userId ?? principal.subject, display: principal.name };
}

/** Where an audited request came from: its client address, user agent and trace id. */
export interface AuditRequestFacts {
  readonly ip: string | null;
  readonly userAgent: string | null;
  readonly traceId: string | null;
}

/** The request facts of an audit entry, from a route's context (or anything with the same parts). */
export function auditRequestOf(request: {
  readonly clientIp?: string | null;
  readonly headers?: HeaderReader;
  readonly traceId?: string | null;
}): AuditRequestFacts {
  const ip = request.clientIp && request.clientIp !== 'unknown' ? request.clientIp : null;
  return { ip, userAgent: request.headers?.get('user-agent') ?? null, traceId: request.traceId ?? null };
}

/** The environment variables of the audit trail. */
export const auditVariables: readonly EnvironmentVariable[] = [
  {
    name: 'IDT_AUDIT_RETENTION_DAYS',
    description:
      'Audit records older than this many days are pruned (each chain keeps a checkpoint, so verification still passes).',
    default: String(DEFAULT_AUDIT_RETENTION_DAYS),
  },
];

/** The audit trail's settings. */
export interface AuditSettings {
  /** `IDT_AUDIT_RETENTION_DAYS`: 1 to 36,500; 365 by default. */
  readonly retentionDays: number;
}

/**
 * Reads the audit trail's settings.
 *
 * @throws ConfigError naming an invalid `IDT_AUDIT_RETENTION_DAYS`.
 */
export function resolveAuditSettings(env: Env): AuditSettings {
  const read = envReader(env);
  const retentionDays = read.integer('IDT_AUDIT_RETENTION_DAYS', { default: DEFAULT_AUDIT_RETENTION_DAYS, min: 1, max: 36_500 });
  read.done();
  return { retentionDays };
}
