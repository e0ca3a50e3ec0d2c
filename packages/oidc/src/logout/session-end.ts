import { type AuditEntry, type Clock, defineEventHandler, type Logger, type ModuleInstance, type PendingEvent } from '@idt/core';
import {
  CacheNamespaces,
  UserDeactivatedEvent,
  UserPasswordResetEvent,
  UserSessionEvictedEvent,
  UserSessionRevokedEvent,
} from '@idt/identity';
import { OidcAuditActions, userActor } from '../audit-actions.js';
import type { StoredClient } from '../clients/store.js';
import { OidcSessionEndedEvent, sessionEnded } from '../events.js';
import type { EndedSession } from '../provider/middleware.js';
import type { ProviderSession, ProviderStateStore } from '../provider/store.js';
import type { BackchannelNotifier } from './backchannel.js';
import type { FrontchannelTarget } from './frontchannel.js';

/** Options of {@link createSessionEnd}. */
export interface SessionEndOptions {
  readonly providerState: ProviderStateStore;
  /** Ends an identity session (the sessions service of `@idt/identity`). */
  readonly endIdentitySession: (userId: string, sessionId: string) => Promise<void>;
  /** A client's record (cached by the caller). */
  readonly findClient: (clientId: string) => Promise<StoredClient | undefined>;
  readonly backchannel: BackchannelNotifier;
  /** Whether the provider state's transactions record on an audit trail: logouts are recorded there. */
  readonly audited?: boolean;
  readonly clock: Clock;
  readonly logger: Logger;
}

/** How single sign-on sessions and token families end. */
export interface SessionEnd {
  /** Ends provider sessions (and their grants) of an identity session or of a user, and queues back-channel logout. */
  endSessions(filter: { sessionId?: string; userId?: string }, reason: string): Promise<number>;
  /** Completes a logout the provider answered: the identity session and every grant end; answers the front-channel targets. */
  onLogout(ended: EndedSession): Promise<readonly FrontchannelTarget[]>;
  /** Withdrawing consent ends the client's token families for the user: refresh tokens, codes and access tokens. */
  revokeClientGrants(userId: string, clientId: string): Promise<void>;
  /**
   * Refuses every access token of a grant from `at` on, evicted from every
   * instance's revocation cache (oidc-provider deletes the grant's stored rows itself).
   */
  refuseAccessTokens(grantId: string, at: Date): Promise<void>;
  /** Back-channel logout of ended sessions, and the end of the sessions identity evicts, revokes or deactivates. */
  readonly handlers: NonNullable<ModuleInstance['handlers']>;
}

/**
 * Ends single sign-on sessions: on logout, when identity ends a session or
 * deactivates a user, and when consent is withdrawn. Every grant of an ended
 * session ends with it, offline access included (SPEC 3.2), and its clients
 * are notified over the back channel.
 */
export function createSessionEnd(options: SessionEndOptions): SessionEnd {
  const { providerState, findClient, clock, logger } = options;

  /**
   * In one transaction: deletes the provider sessions and every stored row
   * of the grants, refuses the grants' access tokens from `at` on (a `grant`
   * watermark each, evicted from every instance's cache), and publishes the events.
   */
  function end(
    sessions: readonly ProviderSession[],
    grants: readonly string[],
    events: readonly PendingEvent[],
    at: Date,
    audit: readonly AuditEntry[] = [],
  ) {
    const grantIds = [...new Set(grants)];
    return providerState.transaction(async (tx) => {
      await tx.deleteSessions(sessions.map((session) => session.id));
      await tx.deleteGrantRows(grantIds);
      await tx.refuseGrants(grantIds, at);
      await tx.evict(grantIds.map((grantId) => ({ namespace: CacheNamespaces.revocations, key: `grant:${grantId}` })));
      await tx.publish(events);
      await tx.audit?.(audit);
    });
  }

  /** The audit entry of a logout: on the trail of the client that asked it (the platform's without one). */
  async function logoutEntry(ended: EndedSession): Promise<AuditEntry> {
    const client = ended.clientId ? await findClient(ended.clientId) : undefined;
    return {
      action: OidcAuditActions.sessionLoggedOut.action,
      organizationId: client?.organizationId ?? null,
      actor: userActor(ended.userId),
      target: { type: 'session', id: ended.sessionId, display: null },
      ...(ended.request ?? {}),
      metadata: { clientId: ended.clientId ?? null, clientIds: [...ended.clientIds], grantCount: ended.grantIds.length },
    };
  }

  async function endSessions(filter: { sessionId?: string; userId?: string }, reason: string): Promise<number> {
    const sessions = await providerState.findSessions(filter);
    // A deactivated user's offline grants end too, not only those of the user's sessions; so do a reset password's.
    const everyGrant = reason === 'deactivated' || reason === 'password-reset';
    const userGrants = filter.userId && everyGrant ? await providerState.grantIdsOf(filter.userId) : [];
    if (!sessions.length && !userGrants.length) return 0;
    const endedAt = clock.now();
    await end(
      sessions,
      [...sessions.flatMap((session) => session.grantIds), ...userGrants],
      sessions
        .filter((session) => session.userId && session.sessionId)
        .map((session) =>
          sessionEnded(session.userId as string, session.sessionId as string, session.clientIds, reason, endedAt),
        ),
      endedAt,
    );
    return sessions.length;
  }

  async function onLogout(ended: EndedSession): Promise<readonly FrontchannelTarget[]> {
    await options
      .endIdentitySession(ended.userId, ended.sessionId)
      .catch((error: unknown) => logger.error('ending the identity session failed', { error, sessionId: ended.sessionId }));
    // oidc-provider keeps offline-access grants on logout; SPEC 3.2 ends every token of the session.
    const endedAt = clock.now();
    await end(
      [],
      ended.grantIds,
      [sessionEnded(ended.userId, ended.sessionId, ended.clientIds, 'logout', endedAt)],
      endedAt,
      options.audited ? [await logoutEntry(ended)] : [],
    );
    const targets = [];
    for (const clientId of ended.clientIds) {
      const client = await findClient(clientId);
      if (client?.frontchannelLogoutUri) targets.push({ clientId, frontchannelLogoutUri: client.frontchannelLogoutUri });
    }
    return targets;
  }

  async function revokeClientGrants(userId: string, clientId: string): Promise<void> {
    const grantIds = await providerState.grantIdsOf(userId, clientId);
    if (grantIds.length) await end([], grantIds, [], clock.now());
  }

  function refuseAccessTokens(grantId: string, at: Date): Promise<void> {
    return providerState.transaction(async (tx) => {
      await tx.refuseGrants([grantId], at);
      await tx.evict([{ namespace: CacheNamespaces.revocations, key: `grant:${grantId}` }]);
    });
  }

  const backchannelHandler = defineEventHandler({
    name: 'oidc.backchannel-logout',
    module: 'oidc',
    event: OidcSessionEndedEvent,
    description: 'Delivers logout+jwt tokens to the back-channel logout URIs of the clients that took part in the session.',
    async handle({ payload }) {
      const targets = [];
      for (const clientId of payload.clientIds.split(' ').filter(Boolean)) {
        const client = await findClient(clientId);
        if (client?.backchannelLogoutUri) targets.push({ clientId, backchannelLogoutUri: client.backchannelLogoutUri });
      }
      if (targets.length) await options.backchannel.notify(targets, payload.userId, payload.sessionId);
    },
  });

  const sessionEndHandlers = [
    defineEventHandler({
      name: 'oidc.end-evicted-session',
      module: 'oidc',
      event: UserSessionEvictedEvent,
      description: 'Ends the single sign-on session of an evicted session: grants revoked, clients notified.',
      handle: async ({ payload }) => void (await endSessions({ sessionId: payload.sessionId }, 'evicted')),
    }),
    defineEventHandler({
      name: 'oidc.end-revoked-session',
      module: 'oidc',
      event: UserSessionRevokedEvent,
      description: 'Ends the single sign-on session of a revoked session: grants revoked, clients notified.',
      handle: async ({ payload }) => void (await endSessions({ sessionId: payload.sessionId }, payload.reason)),
    }),
    defineEventHandler({
      name: 'oidc.end-deactivated-user-sessions',
      module: 'oidc',
      event: UserDeactivatedEvent,
      description: "Ends every single sign-on session of a deactivated user and revokes the user's refresh tokens.",
      handle: async ({ payload }) => void (await endSessions({ userId: payload.userId }, 'deactivated')),
    }),
    // A: passwords
    defineEventHandler({
      name: 'oidc.end-sessions-after-password-reset',
      module: 'oidc',
      event: UserPasswordResetEvent,
      description: "Ends every single sign-on session of a user whose password was reset and revokes the user's refresh tokens.",
      handle: async ({ payload }) => void (await endSessions({ userId: payload.userId }, 'password-reset')),
    }),
  ];

  return { endSessions, onLogout, revokeClientGrants, refuseAccessTokens, handlers: [backchannelHandler, ...sessionEndHandlers] };
}
