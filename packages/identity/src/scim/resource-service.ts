import type { Clock } from '@idt/core';
import type { OrganizationAuditContext } from '../audit/organization-actions.js';
import type { ScimCondition } from './filter.js';
import type { ScimPage, ScimStore } from './store.js';

/**
 * The service of one SCIM resource type (Users, Groups) of an organization:
 * what the `/scim/v2` routes call. Writes are recorded on the audit trail
 * as `context` says (the `scim` actor and the request's facts).
 *
 * @typeParam TRecord - the resource as stored.
 * @typeParam TInput - what a POST or PUT (or a PATCH, once applied) sets.
 * @typeParam TRead - what a read takes beyond the organization and the id (Groups: whether to read the members).
 */
export interface ScimResourceService<TRecord, TInput, TRead extends unknown[] = []> {
  /** A page of the organization's resources that match `filter` (all without one), with the total that match. */
  list(
    organizationId: string,
    filter: ScimCondition | undefined,
    page: ScimPage,
    ...read: TRead
  ): Promise<{ total: number; records: TRecord[] }>;
  /** @throws ScimError 404 when the resource is none of the organization's. */
  get(organizationId: string, id: string, ...read: TRead): Promise<TRecord>;
  /** POST: creates (or provisions) the resource; the resource as stored. */
  create(organizationId: string, input: TInput, context?: OrganizationAuditContext): Promise<TRecord>;
  /** PUT, or PATCH once applied: replaces the resource's attributes; the resource as stored. */
  replace(organizationId: string, id: string, input: TInput, context?: OrganizationAuditContext): Promise<TRecord>;
  /** DELETE: the resource answers 404 from then on. */
  remove(organizationId: string, id: string, context?: OrganizationAuditContext): Promise<void>;
}

/** Dependencies of the SCIM resource services. */
export interface ScimResourceServiceOptions {
  readonly store: ScimStore;
  /** The clock writes are stamped with (the system clock by default). */
  readonly clock?: Clock;
}
