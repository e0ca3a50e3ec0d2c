import { z } from 'zod';

/** A GUID path parameter, compared in lowercase. */
export function idParam(what: string) {
  return z.uuid({ error: `A ${what} id is a GUID.` }).transform((value) => value.toLowerCase());
}

/** `{orgId}` of the organization routes. */
export const OrganizationParams = z.object({ orgId: idParam('organization') });

/** `{orgId}` and `{userId}` of the member routes. */
export const MemberParams = z.object({ orgId: idParam('organization'), userId: idParam('user') });

/** The response of a tenant-owned route when the organization is not the caller's. */
export const organizationNotFound = {
  description: 'Not the organization of your token, or no such organization (`Identity.OrganizationNotFound`)',
} as const;
