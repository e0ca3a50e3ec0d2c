import { type Clock, isUuid, type Logger, type Mailer, newId, silentLogger, systemClock } from '@idt/core';
import type { WindowCounter } from '@idt/core/knex';
import { ProblemError, UnauthorizedError } from '@idt/problem';
import { z } from 'zod';
import { CacheNamespaces } from '../access/cache-namespaces.js';
import { AccountAuditActions, type AccountAuditContext, auditActorFor, auditRequestFacts } from '../audit/account-actions.js';
import { EmailSchema } from '../schemas.js';
import type { TokenMac } from '../tokens.js';
import { UserEmailChangedEvent, UserEmailChangeRequestedEvent } from './events.js';
import type { EmailChangeConfirmation, EmailChangeStore } from './store.js';

/** Thrown inside a transaction to roll it back with a known outcome. */
class Rollback extends Error {
  constructor(readonly result: EmailChangeConfirmation) {
    super('rollback');
  }
}

/** The token purpose of e-mail change links. */
export const EMAIL_CHANGE_TOKEN_PURPOSE = 'email-change';

/** The body of `POST /v1/identity/auth/change-email`. */
export const ChangeEmailInput = z.object({ newEmail: EmailSchema });

/** Input of {@link EmailChangeService.request}. */
export type ChangeEmailInput = z.input<typeof ChangeEmailInput>;

/** The query of `GET /v1/identity/auth/confirm-email-change` (the mailed link). */
export const ConfirmEmailChangeInput = z.object({
  token: z.string().min(1).max(512),
  userId: z.string().min(1).max(64),
  newEmail: z.string().min(1).max(254),
});

/** Input of {@link EmailChangeService.confirm}. */
export type ConfirmEmailChangeInput = z.input<typeof ConfirmEmailChangeInput>;

/** Options of {@link createEmailChangeService}. */
export interface EmailChangeServiceOptions {
  readonly store: EmailChangeStore;
  readonly counter: WindowCounter;
  readonly tokens: TokenMac;
  /** Sends the notice to an address another account already uses. */
  readonly mailer: Mailer;
  /** Requests per user per window; 0 refuses all. */
  readonly maxRequests: number;
  /** The window, in seconds, anchored at the first request. */
  readonly windowSeconds: number;
  /** The public base URL of the API: confirmation links point here. */
  readonly publicBaseUrl: string;
  readonly clock?: Clock;
  readonly logger?: Logger;
  /** How long a confirmation link works; 24 hours by default. */
  readonly linkLifetimeMs?: number;
  /**
   * Whether a module of the deployment mails the confirmation links (the
   * notifications module does; the module's `identity.emailChangeMail` capability).
   * Without one, {@link EmailChangeService.request} refuses with 503
   * `EmailChange.Unavailable` instead of accepting a change nobody can
   * confirm. Defaults to true.
   */
  readonly confirmationsMailed?: boolean;
}

/** A change still waiting for confirmation, with its link: what the confirmation mail says. */
export interface PendingEmailChange {
  readonly changeId: string;
  readonly userId: string;
  /** Lowercase. */
  readonly newEmail: string;
  /** ISO 8601; the link stops working then. */
  readonly expiresAt: string;
  /** The confirmation link (carries a MAC of the change id, never stored). */
  readonly link: string;
}

/**
 * E-mail change (SPEC 3.3): a signed-in user asks for a new address, a link
 * mailed there confirms it, and the old address gets a security notice.
 * Expected refusals are `ProblemError`s, which the routes render as the short
 * bodies of SPEC 4.5.
 */
export interface EmailChangeService {
  /**
   * Asks to move the user to `newEmail`: records the pending change and
   * publishes `UserEmailChangeRequestedEvent` (the notifications module's
   * handler mails the link) and records `identity.emailChange.requested` on
   * the platform trail, in one transaction.
   * When another account uses the address, nothing is recorded and that
   * address gets a short notice instead; the caller cannot tell the
   * difference (and nothing is recorded: nothing changed).
   *
   * @param context who asked and from where, for the audit record (the user by default).
   * @throws ProblemError `Validation.Failed` (400) for a malformed address,
   *   `EmailChange.SameEmail` (400), `EmailChange.Unavailable` (503) when no
   *   module mails confirmations, `RateLimit.Exceeded` (429, with a
   *   `retry-after` header) past the per-user limit.
   * @throws UnauthorizedError when the user is missing or deactivated.
   */
  request(userId: string, input: ChangeEmailInput, context?: AccountAuditContext): Promise<void>;
  /**
   * Confirms a change from its mailed link: e-mail address and username
   * become the new address; existing sessions and tokens stay valid.
   * Records `identity.emailChange.confirmed` (actor: the user, who holds the
   * link) in the same transaction.
   *
   * @param context where the link was opened, for the audit record.
   * @throws ProblemError `EmailChange.TokenExpired` (400) after the link's
   *   lifetime (the pending change is cleared), `EmailChange.InvalidToken`
   *   (400) for a forged, mismatched, superseded or used link.
   */
  confirm(input: ConfirmEmailChangeInput, context?: AccountAuditContext): Promise<{ userId: string; newEmail: string }>;
  /** The confirmation link of a change. */
  confirmationLink(change: { id: string; userId: string; newEmail: string }): string;
  /**
   * The pending change `changeId` of `userId` with its confirmation link, or
   * `null` when it was confirmed, replaced, pruned or belongs to someone
   * else: the mailer of `UserEmailChangeRequestedEvent` then sends nothing.
   */
  pendingConfirmation(changeId: string, userId: string): Promise<PendingEmailChange | null>;
  /** Deletes consumed and expired changes; returns how many. */
  prune(): Promise<number>;
}

/**
 * Creates the e-mail change service.
 *
 * @example
 * const emailChange = createEmailChangeService({ store, counter, tokens, mailer, maxRequests: 3, windowSeconds: 3600, publicBaseUrl });
 * await emailChange.request(userId, { newEmail: 'ada@new.example' });
 */
export function createEmailChangeService(options: EmailChangeServiceOptions): EmailChangeService {
  const { store, counter, tokens, mailer } = options;
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? silentLogger;
  const linkLifetimeMs = options.linkLifetimeMs ?? 86_400_000;
  const base = options.publicBaseUrl.replace(/\/+$/, '');

  function confirmationLink(change: { id: string; userId: string; newEmail: string }): string {
    const query = new URLSearchParams({
      token: tokens.issue(EMAIL_CHANGE_TOKEN_PURPOSE, change.id),
      userId: change.userId,
      newEmail: change.newEmail,
    });
    return `${base}/v1/identity/auth/confirm-email-change?${query.toString()}`;
  }

  /**
   * Consumes the change and moves the user to the new address, in one
   * transaction: `invalid` (nothing written) when the user is no longer
   * active or another account took the address meanwhile.
   */
  async function confirmChange(
    match: { changeId: string; userId: string; newEmail: string },
    now: string,
    context: AccountAuditContext,
  ): Promise<EmailChangeConfirmation> {
    try {
      return await store.transaction(async (tx): Promise<EmailChangeConfirmation> => {
        const consumed = await tx.consume(match, now);
        if (consumed !== 'consumed') return { outcome: consumed };
        const changed = await tx.setAddress(match.userId, match.newEmail, now);
        // Rolls the consumption back: the link stays usable should the refusal pass.
        if (changed.outcome !== 'changed') throw new Rollback({ outcome: 'invalid' });
        await tx.publish([
          {
            event: UserEmailChangedEvent,
            payload: { userId: match.userId, oldEmail: changed.oldEmail, newEmail: match.newEmail },
          },
        ]);
        await tx.evict([{ namespace: CacheNamespaces.users, key: match.userId }]);
        await tx.audit?.([
          {
            action: AccountAuditActions.emailChangeConfirmed.action,
            organizationId: null,
            actor: auditActorFor(context, match.userId, match.newEmail),
            target: { type: 'user', id: match.userId, display: match.newEmail },
            ...auditRequestFacts(context),
            metadata: { from: changed.oldEmail, to: match.newEmail },
          },
        ]);
        return { outcome: 'changed', oldEmail: changed.oldEmail };
      });
    } catch (error) {
      if (error instanceof Rollback) return error.result;
      throw error;
    }
  }

  return {
    confirmationLink,
    async pendingConfirmation(changeId, userId) {
      if (!isUuid(changeId)) return null;
      const change = await store.find(changeId);
      if (!change || change.consumedAt !== null || change.userId !== userId) return null;
      return {
        changeId: change.id,
        userId: change.userId,
        newEmail: change.newEmail,
        expiresAt: change.expiresAt,
        link: confirmationLink(change),
      };
    },
    async request(userId, input, context = {}) {
      const { newEmail } = ChangeEmailInput.parse(input);
      if (options.confirmationsMailed === false) throw new ProblemError('EmailChange.Unavailable');
      const user = await store.findUser(userId);
      if (user?.status !== 'active') throw new UnauthorizedError('The account is missing or deactivated.');
      if (user.email.toLowerCase() === newEmail) throw new ProblemError('EmailChange.SameEmail');
      const decision = await counter.hit(`email-change:${userId}`, options.maxRequests, options.windowSeconds * 1000);
      if (!decision.allowed) {
        throw new ProblemError(
          'RateLimit.Exceeded',
          `Too many e-mail change requests; retry in ${decision.retryAfterSeconds} seconds.`,
          { headers: { 'retry-after': String(decision.retryAfterSeconds) } },
        );
      }
      if (await store.isAddressTaken(newEmail, userId)) {
        // No change and no hint to the caller; the owner of the address learns of the attempt.
        mailer
          .send({
            to: newEmail,
            subject: 'Someone tried to use your e-mail address',
            text: [
              'Someone asked to move another account to this e-mail address.',
              'Your account already uses it, so nothing has changed.',
              '',
              'If this was you, sign in to your existing account instead. Otherwise you can ignore this message.',
            ].join('\n'),
            headers: { 'X-Idt-Template': 'email-change-address-in-use' },
          })
          .catch((error: unknown) => logger.warn('could not send the address-in-use notice', { error }));
        return;
      }
      const now = clock.now();
      const change = {
        id: newId(),
        userId,
        newEmail,
        createdAt: now.toISOString(),
        expiresAt: new Date(now.getTime() + linkLifetimeMs).toISOString(),
      };
      const recorded = await store.transaction(async (tx) => {
        // The user's lock: a request never supersedes a change of a user deactivated meanwhile.
        if (!(await tx.lockUser(userId, { activeOnly: true }))) return false;
        await tx.replace(change);
        await tx.publish([
          {
            event: UserEmailChangeRequestedEvent,
            payload: { userId, changeId: change.id, newEmail, expiresAt: change.expiresAt },
          },
        ]);
        await tx.audit?.([
          {
            action: AccountAuditActions.emailChangeRequested.action,
            organizationId: null,
            actor: auditActorFor(context, userId, user.email),
            target: { type: 'user', id: userId, display: user.email },
            ...auditRequestFacts(context),
            metadata: { from: user.email, to: newEmail, expiresAt: change.expiresAt },
          },
        ]);
        return true;
      });
      if (!recorded) throw new UnauthorizedError('The account is missing or deactivated.');
    },
    async confirm(input, context = {}) {
      const parsed = ConfirmEmailChangeInput.safeParse(input);
      if (!parsed.success) throw new ProblemError('EmailChange.InvalidToken');
      const changeId = tokens.verify(EMAIL_CHANGE_TOKEN_PURPOSE, parsed.data.token);
      const newEmail = parsed.data.newEmail.trim().toLowerCase();
      if (!changeId || !isUuid(changeId) || !isUuid(parsed.data.userId)) throw new ProblemError('EmailChange.InvalidToken');
      const result = await confirmChange(
        { changeId, userId: parsed.data.userId.toLowerCase(), newEmail },
        clock.now().toISOString(),
        context,
      );
      if (result.outcome === 'expired') throw new ProblemError('EmailChange.TokenExpired');
      if (result.outcome === 'invalid') throw new ProblemError('EmailChange.InvalidToken');
      return { userId: parsed.data.userId.toLowerCase(), newEmail };
    },
    prune() {
      return store.prune(clock.now().toISOString());
    },
  };
}
