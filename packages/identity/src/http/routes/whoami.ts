import { defineRoute, json, type Route } from '@idt/core';
import { z } from 'zod';

const Whoami = z.object({
  kind: z.enum(['user', 'service', 'apiKey']),
  subject: z.string(),
  userId: z.string().nullable(),
  clientId: z.string().nullable(),
  organizationId: z.string().nullable(),
  sessionId: z.string().nullable(),
  permissions: z.array(z.string()),
  scopes: z.array(z.string()),
});

/**
 * A set's members in order, sorted once per set: a caller's permissions are
 * one set per cached membership, shared by every request that uses it.
 */
const sortedMembers = new WeakMap<ReadonlySet<string>, readonly string[]>();
function sorted(set: ReadonlySet<string> | undefined): readonly string[] {
  if (!set || set.size === 0) return [];
  let members = sortedMembers.get(set);
  if (!members || members.length !== set.size) {
    members = Object.freeze([...set].sort());
    sortedMembers.set(set, members);
  }
  return members;
}

/**
 * `GET /v1/identity/auth/whoami`: the caller as the API sees it (kind,
 * subject, organization, permissions and scopes), for front ends deciding
 * what to show and for operators checking a credential. Reads nothing beyond
 * the credential.
 */
export function createWhoamiRoutes(): Route[] {
  return [
    defineRoute({
      method: 'GET',
      path: '/v1/identity/auth/whoami',
      operationId: 'whoami',
      summary: 'The authenticated caller: organization, permissions and scopes',
      tags: ['Sessions'],
      tenant: 'optional',
      responses: { 200: { description: 'The caller', schema: Whoami } },
      handler: ({ principal }) =>
        json(
          {
            kind: principal?.kind,
            subject: principal?.subject,
            userId: principal?.userId ?? null,
            clientId: principal?.clientId ?? null,
            organizationId: principal?.organizationId ?? null,
            sessionId: principal?.sessionId ?? null,
            permissions: sorted(principal?.permissions),
            scopes: sorted(principal?.scopes),
          },
          { headers: { 'cache-control': 'no-store' } },
        ),
    }),
  ];
}
