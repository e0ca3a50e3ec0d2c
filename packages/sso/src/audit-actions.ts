import { type AuditActor, type AuditEntry, type AuditMetadata, defineAuditActions } from '@idt/core';
import type { SsoActor } from './access.js';

/**
 * The audit actions of single sign-on: connections, domains, the
 * `ssoRequired` policy, sign-ins through a connection and refused ones.
 * Each is recorded on the trail of the organization it belongs to (the
 * platform's for a platform connection).
 *
 * Names are camelCase inside each dotted part (`sso.signIn.failed`): the
 * trail's action pattern allows no hyphen.
 */
export const SsoAuditActions = defineAuditActions('sso', {
  connectionCreated: {
    action: 'sso.connection.created',
    description: 'A single sign-on connection was created.',
    targetType: 'ssoConnection',
  },
  connectionUpdated: {
    action: 'sso.connection.updated',
    description: 'A single sign-on connection’s settings changed (`metadata.fields`; a new client secret is named, never shown).',
    targetType: 'ssoConnection',
  },
  connectionEnabled: {
    action: 'sso.connection.enabled',
    description: 'A single sign-on connection was enabled.',
    targetType: 'ssoConnection',
  },
  connectionDisabled: {
    action: 'sso.connection.disabled',
    description: 'A single sign-on connection was disabled: nobody signs in through it.',
    targetType: 'ssoConnection',
  },
  connectionDeleted: {
    action: 'sso.connection.deleted',
    description: 'A single sign-on connection was deleted.',
    targetType: 'ssoConnection',
  },
  domainAdded: {
    action: 'sso.domain.added',
    description: 'A domain was claimed (verification pending).',
    targetType: 'ssoDomain',
  },
  domainVerified: {
    action: 'sso.domain.verified',
    description: 'A domain’s DNS TXT record was found: the domain is verified.',
    targetType: 'ssoDomain',
  },
  domainDeleted: { action: 'sso.domain.deleted', description: 'A domain was removed.', targetType: 'ssoDomain' },
  policyChanged: {
    action: 'sso.policy.changed',
    description: 'The organization’s `ssoRequired` changed (`metadata.from`, `metadata.to`).',
    targetType: 'organization',
  },
  signInSucceeded: {
    action: 'sso.signIn.succeeded',
    description:
      'A user signed in through a connection: `metadata.provisioning` is provisioned (a new account), linked (an existing account, first time) or returning.',
    targetType: 'user',
  },
  signInFailed: {
    action: 'sso.signIn.failed',
    description:
      'The OIDC callback or SAML ACS refused an answer (outcome failure): `metadata.reason` is denied, invalid, expired, disabled, suspended, unavailable or no-email.',
    targetType: 'ssoConnection',
  },
});

/** The audit actor of a management call: the route's, else the acting user. */
export function ssoAuditActor(actor: SsoActor): AuditActor {
  return actor.audit?.actor ?? { type: 'user', id: actor.userId, display: null };
}

/** An entry of a management change, with the route's request facts. */
export function ssoChangeEntry(
  action: string,
  actor: SsoActor,
  organizationId: string | null,
  target: { readonly type: string; readonly id: string; readonly display: string | null },
  metadata?: AuditMetadata,
): AuditEntry {
  return {
    action,
    organizationId,
    actor: ssoAuditActor(actor),
    target,
    ...(actor.audit?.request ?? {}),
    ...(metadata ? { metadata } : {}),
  };
}
