import { AUDIT_READ_PERMISSION, type AuditTrail, createAuditRoutes, type Logger, type Principal, type Route } from '@idt/core';
import type { Knex } from 'knex';

/** Options of {@link createIdentityAuditRoutes}. */
export interface IdentityAuditRoutesOptions {
  readonly audit: AuditTrail;
  readonly db: Knex;
  readonly logger?: Logger;
}

/**
 * The audit trail's routes (`/v1/audit/*`, defined in `@idt/core`), served
 * by the identity module because only it knows the platform organization:
 * a caller holding `AuditRead` in the active platform organization is a
 * platform administrator and may read any organization's trail and the
 * platform trail. Everyone else reads their own organization's trail.
 *
 * @example
 * routes.push(...createIdentityAuditRoutes({ audit: ctx.audit, db }));
 */
export function createIdentityAuditRoutes(options: IdentityAuditRoutesOptions): Route[] {
  const { db } = options;
  const isPlatformAdministrator = async (principal: Principal): Promise<boolean> => {
    if (principal.organizationId === null || !principal.permissions.has(AUDIT_READ_PERMISSION)) return false;
    const row = await db('identity_organizations')
      .where({ id: principal.organizationId, is_platform: true, status: 'active' })
      .first(db.raw('1 as found'));
    return row !== undefined;
  };
  return createAuditRoutes({
    audit: options.audit,
    isPlatformAdministrator,
    ...(options.logger ? { logger: options.logger } : {}),
  });
}
