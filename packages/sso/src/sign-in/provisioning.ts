import { type AuditRequestFacts, type Clock, newId, type PendingEvent, randomToken, systemClock } from '@idt/core';
import { CacheNamespaces, MemberJoinedEvent, MembershipRolesChangedEvent, UserRegisteredEvent } from '@idt/identity';
import type { FederatedOutcome, FederationFailureReason } from '@idt/oidc';
import { SsoAuditActions } from '../audit-actions.js';
import type { MappedProfile } from '../connections/claim-mapping.js';
import { rolesForGroups } from '../connections/claim-mapping.js';
import type { ConnectionRecord } from '../connections/records.js';
import { DEFAULT_JIT_ROLE } from '../connections/service.js';
import { UserSignedInWithSsoEvent, type UserSignedInWithSsoPayload } from '../events.js';
import type { LocalUser, ProvisioningStore, ProvisioningWrites } from './provisioning-store.js';
import type { StoredOutcome } from './store.js';

/** How long an outcome waits for its interaction: five minutes. */
export const OUTCOME_TTL_MS = 5 * 60_000;
/** How long a link waits for the account's password: ten minutes. */
export const PENDING_LINK_TTL_MS = 10 * 60_000;
/** The role a connection never takes away: owners stay owners whatever their groups say. */
const KEPT_ROLE = 'owner';
/** identity_users' name columns. */
const MAX_NAME = 100;

/** Who the upstream provider says signed in, once verified. */
export interface UpstreamIdentity {
  /** The connection's id; reloaded (and its state checked) inside the transaction's decision. */
  readonly connectionId: string;
  /** The OIDC `sub` or the SAML NameID. */
  readonly subject: string;
  readonly profile: MappedProfile;
  /** OIDC: the provider asserts `email_verified`. SAML asserts nothing: the domain rule decides. */
  readonly emailVerifiedByProvider: boolean;
  /** RFC 8176 methods the provider asserted. */
  readonly amr: readonly string[];
  readonly initiatedBy: 'sp' | 'idp';
}

/** Where the outcome goes: behind a handle bound to an interaction, or unbound (IdP-initiated). */
export interface OutcomeTarget {
  readonly interactionUid: string | null;
}

/** A stored sign-in outcome and the handle that takes it. */
export interface ProvisionedOutcome {
  readonly handle: string;
  readonly outcome: FederatedOutcome;
}

/** Options of {@link createProvisioner}. */
export interface ProvisionerOptions {
  readonly store: ProvisioningStore;
  /** The connection by id, secrets opened. */
  readonly findConnection: (id: string) => Promise<ConnectionRecord | undefined>;
  /** An organization's name, for the failure pages. */
  readonly organizationName?: (organizationId: string) => Promise<string | null>;
  readonly clock?: Clock;
}

/** Turns verified upstream identities into users here, and stores the outcome. */
export interface Provisioner {
  /**
   * Finds, links or creates the user, applies the connection's roles in its
   * organization, publishes `UserSignedInWithSsoEvent` and stores the
   * outcome behind a new handle: all in one transaction. A refusal
   * (suspended, disabled, no e-mail) changes nothing but its own outcome.
   * `request` (the callback's or ACS post's client address, user agent and
   * trace id) goes on the `sso.signIn.succeeded` or `sso.signIn.failed`
   * record.
   */
  signIn(upstream: UpstreamIdentity, target: OutcomeTarget, request?: AuditRequestFacts): Promise<ProvisionedOutcome>;
  /**
   * Stores a failure behind a new handle and records `sso.signIn.failed` in
   * the same transaction (the connection's organization's trail; the
   * platform's when the connection is unknown or a platform one): the
   * outcome says `audited`, so the sign-in pages record nothing more.
   * `request` is the refused request's facts, for the record.
   */
  fail(
    target: OutcomeTarget,
    reason: FederationFailureReason,
    connection: Pick<ConnectionRecord, 'id' | 'name' | 'organizationId'> | undefined,
    organizationName: string | null,
    request?: AuditRequestFacts,
  ): Promise<ProvisionedOutcome>;
  /**
   * Links a pending identity to `userId` (the account of its address, whose
   * owner just passed their password) and signs in, in one transaction.
   * `request` is the facts of the sign-in page's request that confirmed it.
   */
  link(pending: PendingLink, userId: string, request?: AuditRequestFacts): Promise<FederatedOutcome>;
}

/** A sign-in waiting for the existing account's owner to confirm with their password. */
export interface PendingLink {
  readonly upstream: UpstreamIdentity;
  /** The account of the address. */
  readonly userId: string;
  readonly email: string;
}

/** A refusal decided inside the transaction: it rolls back what the sign-in wrote. */
class Refusal extends Error {
  constructor(readonly reason: FederationFailureReason) {
    super(reason);
  }
}

/** A concurrent sign-in of the same identity or address won a race: run again, it finds their work. */
class Overtaken extends Error {}

/** The domain of an address, lowercase; `undefined` when it is not one. */
export function domainOf(email: string | null): string | undefined {
  if (!email) return undefined;
  const at = email.lastIndexOf('@');
  return at > 0 ? email.slice(at + 1).toLowerCase() : undefined;
}

function namesOf(profile: MappedProfile, email: string): { firstName: string; lastName: string } {
  let first = profile.firstName ?? '';
  let last = profile.lastName ?? '';
  if (!first && !last && profile.name) {
    const parts = profile.name.split(/\s+/);
    first = parts[0] ?? '';
    last = parts.slice(1).join(' ');
  }
  if (!first && !last) first = email.slice(0, email.lastIndexOf('@'));
  return { firstName: first.slice(0, MAX_NAME), lastName: last.slice(0, MAX_NAME) };
}

const sameRoles = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && [...a].sort().every((role, index) => role === [...b].sort()[index]);

/**
 * Creates the provisioner: the linking, just-in-time and isolation rules of
 * SSO sign-in.
 *
 * - A known identity `(connection, subject)` signs in as its user.
 * - Else an existing account with the address links by itself only when the
 *   provider asserts the address verified (SAML: by the domain rule), the
 *   account's address is verified, and the connection's organization verified
 *   the domain; otherwise the account's owner confirms with their password
 *   (`link-required`). Never by e-mail alone.
 * - Else the user is created (no password), the address verified only when
 *   the provider asserts it or the organization verified its domain.
 * - In the connection's organization, and no other, the membership is created
 *   active (or a pending one activated) with the roles the connection's
 *   group table gives, re-applied at every sign-in (`owner` is kept). A
 *   suspended or denied membership refuses the sign-in (`suspended`); so does
 *   a deactivated user. Platform connections touch no membership.
 *
 * @example
 * const provisioner = createProvisioner({ store, findConnection: connections.find, clock });
 * const { handle } = await provisioner.signIn(upstream, { interactionUid });
 */
export function createProvisioner(options: ProvisionerOptions): Provisioner {
  const { store, findConnection } = options;
  const clock = options.clock ?? systemClock;

  const save = async (tx: ProvisioningWrites, target: OutcomeTarget, outcome: FederatedOutcome): Promise<ProvisionedOutcome> => {
    const handle = randomToken(32);
    const stored: StoredOutcome = {
      kind: 'outcome',
      interactionUid: target.interactionUid,
      data: { outcome },
      expiresAt: new Date(clock.now().getTime() + OUTCOME_TTL_MS),
    };
    await tx.saveOutcome(handle, stored);
    return { handle, outcome };
  };

  const failure = (
    reason: FederationFailureReason,
    connection: Pick<ConnectionRecord, 'name'> | undefined,
    organizationName: string | null,
  ): FederatedOutcome => ({
    kind: 'failed',
    reason,
    organizationName,
    connectionName: connection?.name ?? null,
  });

  async function fail(
    target: OutcomeTarget,
    reason: FederationFailureReason,
    connection: Pick<ConnectionRecord, 'id' | 'name' | 'organizationId'> | undefined,
    organizationName: string | null,
    request?: AuditRequestFacts,
  ): Promise<ProvisionedOutcome> {
    return store.transaction(async (tx) => {
      const audited = tx.audit !== undefined;
      await tx.audit?.([
        {
          action: SsoAuditActions.signInFailed.action,
          organizationId: connection?.organizationId ?? null,
          actor: { type: 'system', id: null, display: null },
          target: connection ? { type: 'ssoConnection', id: connection.id, display: connection.name } : null,
          outcome: 'failure',
          ...request,
          metadata: { reason, ...(target.interactionUid === null ? { initiatedBy: 'idp' } : {}) },
        },
      ]);
      return save(tx, target, { ...failure(reason, connection, organizationName), ...(audited ? { audited: true } : {}) });
    });
  }

  /**
   * The decision, inside the transaction. `linkTo` is the account a pending
   * link confirmed; otherwise the identity, the address and JIT decide.
   * `request` is the facts of the request that signs in, for the record.
   */
  async function decide(
    tx: Parameters<Parameters<ProvisioningStore['transaction']>[0]>[0],
    connection: ConnectionRecord,
    upstream: UpstreamIdentity,
    linkTo: string | undefined,
    request?: AuditRequestFacts,
  ): Promise<FederatedOutcome | { pending: PendingLink; organizationName: string | null }> {
    const at = clock.now().toISOString();
    const organizationId = connection.organizationId;
    let organizationName: string | null = null;
    if (organizationId !== null) {
      const organization = await tx.lockOrganization(organizationId);
      if (organization?.status !== 'active') throw new Refusal('disabled');
      organizationName = organization.name;
    }
    const email = upstream.profile.email?.toLowerCase() ?? null;
    const domain = domainOf(email);
    const domainVerified =
      organizationId !== null && domain !== undefined && (await tx.isDomainVerifiedBy(domain, organizationId));
    // SAML asserts no verification: only the organization's verified domain vouches for the address.
    const verifiedUpstream = upstream.emailVerifiedByProvider || domainVerified;

    let user: LocalUser | undefined;
    let path: UserSignedInWithSsoPayload['path'];
    const known = await tx.findIdentity(connection.id, upstream.subject);
    if (known) {
      // A pending link for another account than the one the identity already belongs to.
      if (linkTo !== undefined && known.userId !== linkTo) throw new Refusal('invalid');
      user = await tx.findUser(known.userId);
      if (user?.status !== 'active') throw new Refusal('suspended');
      path = 'returning';
      await tx.touchIdentity(connection.id, upstream.subject, email, at);
    } else if (linkTo !== undefined) {
      user = await tx.findUser(linkTo);
      if (user?.status !== 'active') throw new Refusal('suspended');
      if (!(await tx.linkIdentity({ connectionId: connection.id, subject: upstream.subject, userId: user.id, email, at }))) {
        throw new Overtaken();
      }
      path = 'linked';
    } else {
      if (!email) throw new Refusal('no-email');
      const existing = await tx.findUserByEmail(email);
      if (existing) {
        if (existing.status !== 'active') throw new Refusal('suspended');
        // OIDC: the provider's email_verified; SAML asserts nothing, the domain rule stands for it.
        const assertedUpstream = connection.kind === 'oidc' ? upstream.emailVerifiedByProvider : domainVerified;
        if (!(assertedUpstream && existing.emailVerified && domainVerified)) {
          return { pending: { upstream, userId: existing.id, email }, organizationName };
        }
        user = existing;
        if (!(await tx.linkIdentity({ connectionId: connection.id, subject: upstream.subject, userId: user.id, email, at }))) {
          throw new Overtaken();
        }
        path = 'linked';
      } else {
        const created = {
          id: newId(),
          email,
          ...namesOf(upstream.profile, email),
          emailVerified: verifiedUpstream,
          at,
        };
        if (!(await tx.insertUser(created))) throw new Overtaken();
        if (!(await tx.linkIdentity({ connectionId: connection.id, subject: upstream.subject, userId: created.id, email, at }))) {
          throw new Overtaken();
        }
        user = { id: created.id, email, emailVerified: created.emailVerified, status: 'active' };
        path = 'provisioned';
      }
    }

    const events: PendingEvent[] = [];
    let roles: string[] | null = null;
    if (organizationId !== null) {
      const mapped = rolesForGroups(upstream.profile.groups, connection.roleMapping, connection.defaultRole ?? DEFAULT_JIT_ROLE);
      const membership = await tx.membership(user.id, organizationId);
      if (membership && (membership.status === 'suspended' || membership.status === 'denied')) throw new Refusal('suspended');
      if (membership) {
        roles = [...new Set([...(membership.roles.includes(KEPT_ROLE) ? [KEPT_ROLE] : []), ...mapped])];
        if (membership.status !== 'active' || !sameRoles(roles, membership.roles)) {
          await tx.updateMembership(membership.id, 'active', roles, at);
          events.push({
            event: MembershipRolesChangedEvent,
            payload: { organizationId, userId: user.id, roles: roles.join(' '), changedByUserId: null },
          });
        }
      } else {
        roles = mapped;
        await tx.insertMembership({ id: newId(), userId: user.id, organizationId, roles, at });
        // `enrollment`: the event has no `sso` way in yet; the sign-in event below says how.
        events.push({ event: MemberJoinedEvent, payload: { organizationId, userId: user.id, via: 'sso' } });
      }
      await tx.evict([{ namespace: CacheNamespaces.memberships, key: `${user.id}:${organizationId}` }]);
    }
    if (path === 'provisioned') events.unshift({ event: UserRegisteredEvent, payload: { userId: user.id, email } });
    const payload: UserSignedInWithSsoPayload = {
      userId: user.id,
      connectionId: connection.id,
      organizationId,
      kind: connection.kind,
      initiatedBy: upstream.initiatedBy,
      path,
      roles,
      signedInAt: at,
    };
    events.push({ event: UserSignedInWithSsoEvent, payload });
    await tx.publish(events);
    await tx.audit?.([
      {
        action: SsoAuditActions.signInSucceeded.action,
        organizationId,
        actor: { type: 'user', id: user.id, display: user.email },
        target: { type: 'user', id: user.id, display: user.email },
        ...request,
        metadata: {
          provisioning: path,
          connectionId: connection.id,
          connectionName: connection.name,
          protocol: connection.kind,
          initiatedBy: upstream.initiatedBy,
          roles,
        },
      },
    ]);
    return { kind: 'signed-in', userId: user.id, amr: [...upstream.amr], organizationId };
  }

  /** Runs the decision; a race lost to a concurrent sign-in runs once more. */
  async function run<T>(attempt: () => Promise<T>): Promise<T> {
    try {
      return await attempt();
    } catch (error) {
      if (error instanceof Overtaken) return attempt();
      throw error;
    }
  }

  async function usableConnection(id: string): Promise<ConnectionRecord | undefined> {
    const connection = await findConnection(id);
    return connection?.enabled ? connection : undefined;
  }

  return {
    fail,

    async signIn(upstream, target, request) {
      const connection = await usableConnection(upstream.connectionId);
      if (!connection) return fail(target, 'disabled', undefined, null, request);
      try {
        return await run(() =>
          store.transaction(async (tx) => {
            const decided = await decide(tx, connection, upstream, undefined, request);
            if ('pending' in decided) {
              const handle = randomToken(32);
              await tx.saveOutcome(handle, {
                kind: 'outcome',
                interactionUid: target.interactionUid,
                data: { pending: decided.pending, connectionName: connection.name },
                expiresAt: new Date(clock.now().getTime() + OUTCOME_TTL_MS),
              });
              const outcome: FederatedOutcome = {
                kind: 'link-required',
                email: decided.pending.email,
                connectionName: connection.name,
                // Replaced by the link handle when the interaction takes this outcome.
                handle: '',
              };
              return { handle, outcome };
            }
            return save(tx, target, decided);
          }),
        );
      } catch (error) {
        if (!(error instanceof Refusal)) throw error;
        return fail(target, error.reason, connection, await organizationNameOf(connection), request);
      }
    },

    async link(pending, userId, request) {
      const connection = await usableConnection(pending.upstream.connectionId);
      if (!connection) return failure('disabled', undefined, null);
      if (pending.userId !== userId) return failure('invalid', connection, await organizationNameOf(connection));
      try {
        return await run(() =>
          store.transaction(async (tx) => {
            const decided = await decide(tx, connection, pending.upstream, userId, request);
            if ('pending' in decided) throw new Refusal('invalid');
            return decided;
          }),
        );
      } catch (error) {
        if (!(error instanceof Refusal)) throw error;
        return failure(error.reason, connection, await organizationNameOf(connection));
      }
    },
  };

  async function organizationNameOf(connection: ConnectionRecord): Promise<string | null> {
    if (connection.organizationId === null) return null;
    return options.organizationName ? options.organizationName(connection.organizationId) : null;
  }
}
