import { defineEvent } from '@idt/core';
import { z } from 'zod';
import { CONNECTION_KINDS } from './connections/records.js';

/** What happened to a connection. */
export const CONNECTION_CHANGES = ['created', 'updated', 'enabled', 'disabled', 'deleted'] as const;

/**
 * A single sign-on connection was created, changed, enabled, disabled or
 * deleted; written to the outbox in the transaction of the change.
 */
export const SsoConnectionChangedEvent = defineEvent({
  type: 'SsoConnectionChangedEvent',
  module: 'sso',
  description:
    'A single sign-on connection was created, changed, enabled, disabled or deleted. Consumers audit it or refresh a cached sign-in page.',
  schema: z.object({
    connectionId: z.string().min(1),
    organizationId: z.string().min(1).nullable().describe('The owning organization; null for a platform connection.'),
    kind: z.enum(CONNECTION_KINDS),
    name: z.string(),
    change: z.enum(CONNECTION_CHANGES),
    enabled: z.boolean().describe('Whether the connection is enabled after the change (false once deleted).'),
    changedBy: z.string().min(1).nullable().describe('The user who made the change; null for a service account.'),
    changedAt: z.string().describe('ISO 8601 UTC'),
  }),
});

/** The payload of {@link SsoConnectionChangedEvent}. */
export type SsoConnectionChangedPayload = z.output<typeof SsoConnectionChangedEvent.schema>;

/** An organization proved control of a domain by its DNS TXT record. */
export const DomainVerifiedEvent = defineEvent({
  type: 'DomainVerifiedEvent',
  module: 'sso',
  description:
    'An organization proved control of a domain through its DNS TXT record; addresses of the domain now route to its connections.',
  schema: z.object({
    domainId: z.string().min(1),
    organizationId: z.string().min(1),
    domain: z.string().min(1),
    verifiedBy: z.string().min(1).nullable().describe('The user who asked for the check; null for a service account.'),
    verifiedAt: z.string().describe('ISO 8601 UTC'),
  }),
});

/** The payload of {@link DomainVerifiedEvent}. */
export type DomainVerifiedPayload = z.output<typeof DomainVerifiedEvent.schema>;

/** How an SSO sign-in found its user. */
export const SSO_SIGN_IN_PATHS = ['returning', 'linked', 'provisioned'] as const;

/**
 * Someone signed in through a single sign-on connection; written to the
 * outbox in the transaction that found, linked or created the user and
 * applied the connection's roles.
 */
export const UserSignedInWithSsoEvent = defineEvent({
  type: 'UserSignedInWithSsoEvent',
  module: 'sso',
  description:
    'A user signed in through a single sign-on connection (OpenID Connect or SAML): returning, newly linked to an existing account, or created just in time. Consumers audit it.',
  schema: z.object({
    userId: z.string().min(1),
    connectionId: z.string().min(1),
    organizationId: z.string().min(1).nullable().describe('The connection’s organization; null for a platform connection.'),
    kind: z.enum(CONNECTION_KINDS),
    initiatedBy: z.enum(['sp', 'idp']).describe('`idp` for an IdP-initiated (unsolicited) SAML sign-in.'),
    path: z
      .enum(SSO_SIGN_IN_PATHS)
      .describe(
        '`returning`: a known identity; `linked`: linked to an existing account now; `provisioned`: created just in time.',
      ),
    roles: z
      .array(z.string())
      .nullable()
      .describe('The roles applied in the organization at this sign-in; null for a platform connection.'),
    signedInAt: z.string().describe('ISO 8601 UTC'),
  }),
});

/** The payload of {@link UserSignedInWithSsoEvent}. */
export type UserSignedInWithSsoPayload = z.output<typeof UserSignedInWithSsoEvent.schema>;

/** An organization changed its single sign-on policy (`ssoRequired`). */
export const SsoPolicyChangedEvent = defineEvent({
  type: 'SsoPolicyChangedEvent',
  module: 'sso',
  description:
    'An organization changed its single sign-on policy: with `ssoRequired`, addresses of its verified domains sign in only through its connection.',
  schema: z.object({
    organizationId: z.string().min(1),
    ssoRequired: z.boolean(),
    changedBy: z.string().min(1).nullable().describe('The user who made the change; null for a service account.'),
    changedAt: z.string().describe('ISO 8601 UTC'),
  }),
});

/** The payload of {@link SsoPolicyChangedEvent}. */
export type SsoPolicyChangedPayload = z.output<typeof SsoPolicyChangedEvent.schema>;

/** Every integration event of the sso module, for the catalog and webhooks. */
export const ssoEvents = [
  SsoConnectionChangedEvent,
  DomainVerifiedEvent,
  UserSignedInWithSsoEvent,
  SsoPolicyChangedEvent,
] as const;
