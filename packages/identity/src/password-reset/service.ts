import {
  type Clock,
  constantTimeEqual,
  isUuid,
  type Logger,
  newId,
  sha256Hex,
  silentLogger,
  systemClock,
  type TransactionEffects,
} from '@idt/core';
import type { WindowCounter } from '@idt/core/knex';
import { ProblemError, UnauthorizedError } from '@idt/problem';
import { z } from 'zod';
import { CacheNamespaces, type Eviction } from '../access/cache-namespaces.js';
import { type PasswordPolicy, verifyPassword } from '../password-policy/policy.js';
import type { PasswordHasher } from '../passwords.js';
import { EmailSchema } from '../schemas.js';
import { UserSessionRevokedEvent } from '../sessions/events.js';
import { sessionEvictions } from '../sessions/policy.js';
import type { TokenMac } from '../tokens.js';
import { PasswordAuditActions } from './audit.js';
import { UserPasswordChangedEvent, UserPasswordResetEvent, UserPasswordResetRequestedEvent } from './events.js';
import type { PasswordAccount, PasswordResetStore, PasswordResetWrites } from './store.js';

/** The token purpose of reset links. */
export const PASSWORD_RESET_TOKEN_PURPOSE = 'password-reset';

/** Where the reset page lives, below the sign-in pages' base URL. */
export const PASSWORD_RESET_PAGE_PATH = '/connect/password-reset';

/** A new password as a request carries it: a string of at most 4,096 characters (the policy judges the rest). */
const NewPasswordSchema = z
  .string({ error: 'Enter a new password.' })
  .min(1, 'Enter a new password.')
  .max(4096, 'A password has at most 256 characters.')
  .meta({ format: 'password' });

/** The body of `POST /v1/identity/auth/password-reset`. */
export const PasswordResetRequestInput = z.object({ email: EmailSchema });
/** Input of {@link PasswordResetService.request}. */
export type PasswordResetRequestInput = z.input<typeof PasswordResetRequestInput>;

/** The body of `POST /v1/identity/auth/password-reset/confirm`. */
export const PasswordResetConfirmInput = z.object({
  token: z.string().min(1).max(512).meta({ description: 'The token of the mailed link (its `token` query parameter).' }),
  newPassword: NewPasswordSchema,
});
/** Input of {@link PasswordResetService.confirm}. */
export type PasswordResetConfirmInput = z.input<typeof PasswordResetConfirmInput>;

/** The body of `POST /v1/identity/auth/change-password`. */
export const ChangePasswordInput = z.object({
  currentPassword: z
    .string({ error: 'Enter your current password.' })
    .min(1, 'Enter your current password.')
    .max(4096, 'Enter your current password.')
    .meta({ format: 'password' }),
  newPassword: NewPasswordSchema,
});
/** Input of {@link PasswordChangeService.change}. */
export type ChangePasswordInput = z.input<typeof ChangePasswordInput>;

/** A reset still waiting, with its link: what the reset mail says. */
export interface PendingPasswordReset {
  readonly resetId: string;
  readonly userId: string;
  /** The account's current address. */
  readonly email: string;
  readonly firstName: string;
  /** ISO 8601; the link stops working then. */
  readonly expiresAt: string;
  /** The link to the reset page (carries a MAC of the reset id; only its SHA-256 is stored). */
  readonly link: string;
}

/** Where a password request came from, for the audit trail (`auditRequestOf(route)` of `@idt/core`). */
export interface PasswordRequestContext {
  readonly ip?: string | null;
  readonly userAgent?: string | null;
  readonly traceId?: string | null;
}

/** What a reset link is worth, without using it. */
export type PasswordResetTokenState = 'valid' | 'expired' | 'invalid';

/**
 * The forgotten-password flow: a request mails a single-use link valid one
 * hour to an active account's address; the link sets a new password (the
 * policy applies) and ends every session, refresh-token family and access
 * token of the user. An operator's reset ({@link PasswordResetService.setByOperator})
 * does the same without a link.
 */
export interface PasswordResetService {
  /**
   * Asks for a reset link. Answers the same, in about the same time, whether
   * or not an active account uses the address (only then is a reset recorded
   * and `UserPasswordResetRequestedEvent` published; the notifications
   * module mails the link). A new request replaces the user's earlier link.
   *
   * @throws ProblemError `Validation.Failed` (400), `RateLimit.Exceeded` (429, `retry-after` header:
   *   3 per address and `maxRequestsPerIp` per client address per 15 minutes),
   *   `PasswordReset.Unavailable` (503) when no module mails the links.
   */
  request(input: PasswordResetRequestInput, context?: { readonly ip?: string }): Promise<void>;
  /** What a link's token is worth now (the reset page asks before showing its form); consumes nothing. */
  inspect(token: string): Promise<PasswordResetTokenState>;
  /**
   * Sets a new password with a link's token: consumes it (exactly one use
   * wins), ends every session and token of the user and publishes
   * `UserPasswordResetEvent` and records `identity.password.reset` on the
   * audit trail, in one transaction.
   *
   * @param context where the request came from, for the audit record.
   * @throws ProblemError `PasswordReset.InvalidToken` / `PasswordReset.TokenExpired` (400),
   *   `Identity.PasswordRejected` (422, the link stays usable), `Validation.Failed` (400).
   */
  confirm(input: PasswordResetConfirmInput, context?: PasswordRequestContext): Promise<{ userId: string }>;
  /**
   * An operator sets a user's password (`idt users reset-password`; the
   * account may be compromised): the policy applies for that user, then, in
   * one transaction, as {@link PasswordResetService.confirm} does after using
   * the link, the password is set, the user's reset links stop working, every
   * session (reason `operator-reset`), refresh-token family and access token
   * of the user ends, `UserPasswordResetEvent` (`by: 'operator'`) is
   * published and `identity.password.reset` recorded (actor `operator`). The address is not marked verified: no mail proved it works.
   *
   * @example
   * await identity.passwords.reset.setByOperator(user.id, 'violet lantern orbit meadow');
   * @throws ProblemError `Identity.UserNotFound` (404), `Identity.UserAlreadyDeactivated` (422, also when
   *   deactivated meanwhile), `Identity.PasswordRejected` (422) and `Validation.Failed` (400) changing nothing.
   */
  setByOperator(userId: string, newPassword: string): Promise<{ userId: string; email: string }>;
  /** The reset `resetId` of `userId` with its link, or `null` once it was used, replaced, expired or pruned. */
  pendingReset(resetId: string, userId: string): Promise<PendingPasswordReset | null>;
  /** Deletes consumed and expired resets; returns how many. */
  prune(): Promise<number>;
}

/** A signed-in user's password change. */
export interface PasswordChangeService {
  /**
   * Changes the password of a signed-in user who knows the current one: the
   * policy applies, every other session of the user ends (and its tokens),
   * outstanding reset links stop working, `UserPasswordChangedEvent` is
   * published and `identity.password.changed` recorded on the audit trail,
   * in one transaction.
   *
   * @param context.sessionId the session the request came with: it stays signed in.
   * @param context where the request came from, for the audit record.
   * @throws ProblemError `PasswordChange.WrongPassword` (400), `Identity.PasswordRejected` (422),
   *   `RateLimit.Exceeded` (429; 5 attempts per user per 15 minutes), `Validation.Failed` (400).
   * @throws UnauthorizedError when the user is missing or deactivated.
   */
  change(
    userId: string,
    input: ChangePasswordInput,
    context?: { readonly sessionId?: string | null } & PasswordRequestContext,
  ): Promise<void>;
}

/** Options of {@link createPasswordServices}. */
export interface PasswordServicesOptions {
  readonly store: PasswordResetStore;
  readonly policy: PasswordPolicy;
  readonly hasher: PasswordHasher;
  readonly counter: WindowCounter;
  readonly tokens: TokenMac;
  /** The base URL of the sign-in pages (prefix included): reset links point below it. */
  readonly authUrl: string;
  /** Whether a module mails the links (the notifications module); without one, requests answer 503. Default true. */
  readonly linksMailed?: boolean;
  /** Reset requests per client address per window; 20 by default. */
  readonly maxRequestsPerIp?: number;
  readonly clock?: Clock;
  readonly logger?: Logger;
  /** How long a link works; one hour by default. */
  readonly linkLifetimeMs?: number;
}

/** Who reset a password: the user with a mailed link, or an operator. */
type ResetBy = 'link' | 'operator';

/** Requests per address per window, as for sign-in e-mails. */
const MAX_REQUESTS_PER_ADDRESS = 3;
/** Change attempts per user per window. */
const MAX_CHANGE_ATTEMPTS = 5;
const WINDOW_MS = 15 * 60_000;

/**
 * Creates the password reset and change services.
 *
 * @example
 * const { reset, change } = createPasswordServices({ store, policy, hasher, counter, tokens, authUrl });
 * await reset.request({ email: 'ada@example.com' }, { ip });
 */
export function createPasswordServices(options: PasswordServicesOptions): {
  reset: PasswordResetService;
  change: PasswordChangeService;
} {
  const { store, policy, hasher, counter, tokens } = options;
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? silentLogger;
  const linkLifetimeMs = options.linkLifetimeMs ?? 3_600_000;
  const maxPerIp = options.maxRequestsPerIp ?? 20;
  const base = options.authUrl.replace(/\/+$/, '');

  const linkOf = (resetId: string) =>
    `${base}${PASSWORD_RESET_PAGE_PATH}?token=${encodeURIComponent(tokens.issue(PASSWORD_RESET_TOKEN_PURPOSE, resetId))}`;

  async function admit(key: string, max: number, what: string): Promise<void> {
    const decision = await counter.hit(key, max, WINDOW_MS);
    if (!decision.allowed) {
      throw new ProblemError('RateLimit.Exceeded', `Too many ${what}; retry in ${decision.retryAfterSeconds} seconds.`, {
        headers: { 'retry-after': String(decision.retryAfterSeconds) },
      });
    }
  }

  /** The reset a token names, when its MAC and stored hash both match. */
  async function resetOf(token: unknown) {
    if (typeof token !== 'string' || token.length > 512) return undefined;
    const resetId = tokens.verify(PASSWORD_RESET_TOKEN_PURPOSE, token);
    if (!resetId || !isUuid(resetId)) return undefined;
    const reset = await store.find(resetId.toLowerCase());
    if (!reset || !constantTimeEqual(reset.tokenHash, sha256Hex(token))) return undefined;
    return reset;
  }

  function contextOf(user: PasswordAccount) {
    return { email: user.email, firstName: user.firstName, lastName: user.lastName };
  }

  const userEvictions = (userId: string): Eviction[] => [
    { namespace: CacheNamespaces.users, key: userId },
    { namespace: CacheNamespaces.revocations, key: `user:${userId}` },
  ];

  /**
   * What every reset does, in the caller's transaction: sets the hash (a
   * link also proves the address), retires the other links, ends every
   * session and token of the user, publishes `UserPasswordResetEvent` and
   * records `identity.password.reset`.
   *
   * @returns false, writing nothing, when the user is no longer active.
   */
  async function resetIn(
    tx: PasswordResetWrites & TransactionEffects,
    user: PasswordAccount,
    passwordHash: string,
    now: string,
    by: ResetBy,
    request: PasswordRequestContext = {},
  ) {
    if (!(await tx.setPasswordHash(user.id, passwordHash, now, { emailVerified: by === 'link' }))) return false;
    await tx.retire(user.id);
    const ended = await tx.endSessions(user.id, by === 'link' ? 'password-reset' : 'operator-reset', now);
    await tx.revokeUserTokens(user.id, now);
    await tx.evict([...userEvictions(user.id), ...ended.flatMap(sessionEvictions)]);
    await tx.publish([{ event: UserPasswordResetEvent, payload: { userId: user.id, email: user.email, resetAt: now, by } }]);
    await tx.audit?.([
      {
        action: PasswordAuditActions.reset.action,
        organizationId: null,
        actor: by === 'link' ? { type: 'user', id: user.id, display: user.email } : { type: 'operator', id: null, display: null },
        target: { type: 'user', id: user.id, display: user.email },
        ip: request.ip ?? null,
        userAgent: request.userAgent ?? null,
        traceId: request.traceId ?? null,
        metadata: { by, sessionsEnded: ended.length },
      },
    ]);
    return true;
  }

  const reset: PasswordResetService = {
    async request(input, context = {}) {
      const { email } = PasswordResetRequestInput.parse(input);
      if (options.linksMailed === false) throw new ProblemError('PasswordReset.Unavailable');
      // Both limits count before the address is looked up: a refusal says nothing about the account.
      if (context.ip) await admit(`password-reset-ip:${context.ip}`, maxPerIp, 'password reset requests from this address');
      await admit(`password-reset:${email}`, MAX_REQUESTS_PER_ADDRESS, 'password reset requests for this e-mail address');
      const user = await store.findActiveUserByEmail(email);
      if (!user) return;
      const now = clock.now();
      const resetId = newId();
      const expiresAt = new Date(now.getTime() + linkLifetimeMs).toISOString();
      const token = tokens.issue(PASSWORD_RESET_TOKEN_PURPOSE, resetId);
      await store.transaction(async (tx) => {
        if (!(await tx.lockUser(user.id, { activeOnly: true }))) return;
        await tx.replace({ id: resetId, userId: user.id, tokenHash: sha256Hex(token), createdAt: now.toISOString(), expiresAt });
        await tx.publish([{ event: UserPasswordResetRequestedEvent, payload: { userId: user.id, resetId, expiresAt } }]);
      });
      logger.info('password reset requested', { userId: user.id, resetId });
    },

    async inspect(token) {
      const found = await resetOf(token);
      if (!found || found.consumedAt !== null) return 'invalid';
      if (new Date(found.expiresAt).getTime() <= clock.now().getTime()) return 'expired';
      const user = await store.findUser(found.userId);
      return user?.status === 'active' ? 'valid' : 'invalid';
    },

    async confirm(input, context = {}) {
      const parsed = PasswordResetConfirmInput.parse(input);
      const found = await resetOf(parsed.token);
      if (!found || found.consumedAt !== null) throw new ProblemError('PasswordReset.InvalidToken');
      const match = { resetId: found.id, tokenHash: found.tokenHash };
      if (new Date(found.expiresAt).getTime() <= clock.now().getTime()) {
        await store.transaction((tx) => tx.consume(match, clock.now().toISOString()));
        throw new ProblemError('PasswordReset.TokenExpired');
      }
      const user = await store.findUser(found.userId);
      if (user?.status !== 'active') throw new ProblemError('PasswordReset.InvalidToken');
      // Judged and hashed before the link is used: a refused password leaves the link working.
      const normalized = await policy.require(parsed.newPassword, contextOf(user));
      const passwordHash = await hasher.hash(normalized);
      const now = clock.now().toISOString();
      const outcome = await store.transaction(async (tx) => {
        const consumed = await tx.consume(match, now);
        if (consumed !== 'consumed') return consumed;
        if (!(await resetIn(tx, user, passwordHash, now, 'link', context))) {
          throw new ProblemError('PasswordReset.InvalidToken'); // deactivated meanwhile: roll the use back
        }
        return consumed;
      });
      if (outcome === 'expired') throw new ProblemError('PasswordReset.TokenExpired');
      if (outcome === 'invalid') throw new ProblemError('PasswordReset.InvalidToken');
      logger.info('password reset with a link', { userId: user.id });
      return { userId: user.id };
    },

    async setByOperator(userId, newPassword) {
      const user = isUuid(userId) ? await store.findUser(userId.toLowerCase()) : undefined;
      if (!user) throw new ProblemError('Identity.UserNotFound', 'No such user.');
      const deactivated = () =>
        new ProblemError('Identity.UserAlreadyDeactivated', `The user ${user.email} is deactivated; reactivate the user first.`);
      if (user.status !== 'active') throw deactivated();
      const normalized = await policy.require(NewPasswordSchema.parse(newPassword), contextOf(user));
      const passwordHash = await hasher.hash(normalized);
      const now = clock.now().toISOString();
      if (!(await store.transaction((tx) => resetIn(tx, user, passwordHash, now, 'operator')))) throw deactivated();
      logger.info('password reset by an operator', { userId: user.id });
      return { userId: user.id, email: user.email };
    },

    async pendingReset(resetId, userId) {
      if (!isUuid(resetId)) return null;
      const found = await store.find(resetId);
      if (!found || found.consumedAt !== null || found.userId !== userId) return null;
      if (new Date(found.expiresAt).getTime() <= clock.now().getTime()) return null;
      const user = await store.findUser(userId);
      if (user?.status !== 'active') return null;
      return {
        resetId,
        userId,
        email: user.email,
        firstName: user.firstName,
        expiresAt: found.expiresAt,
        link: linkOf(resetId),
      };
    },

    prune() {
      return store.prune(clock.now().toISOString());
    },
  };

  const change: PasswordChangeService = {
    async change(userId, input, context = {}) {
      const parsed = ChangePasswordInput.parse(input);
      const user = await store.findUser(userId);
      if (user?.status !== 'active') throw new UnauthorizedError('The account is missing or deactivated.');
      await admit(`password-change:${userId}`, MAX_CHANGE_ATTEMPTS, 'password change attempts');
      if (!user.passwordHash || !(await verifyPassword(hasher, user.passwordHash, parsed.currentPassword))) {
        throw new ProblemError('PasswordChange.WrongPassword');
      }
      const normalized = await policy.require(parsed.newPassword, contextOf(user));
      const passwordHash = await hasher.hash(normalized);
      const now = clock.now().toISOString();
      const keep = context.sessionId ?? null;
      await store.transaction(async (tx) => {
        // Compare-and-set: a concurrent change or reset since the check wins, this one changes nothing.
        if (!(await tx.setPasswordHash(userId, passwordHash, now, { expected: user.passwordHash ?? undefined }))) {
          throw new ProblemError('PasswordChange.WrongPassword');
        }
        await tx.retire(userId);
        const ended = await tx.endSessions(userId, 'password-changed', now, keep);
        await tx.evict([{ namespace: CacheNamespaces.users, key: userId }, ...ended.flatMap(sessionEvictions)]);
        await tx.publish([
          { event: UserPasswordChangedEvent, payload: { userId, email: user.email, changedAt: now } },
          // The provider ends the single sign-on sessions (and their grants) of the sessions ended here.
          ...ended.map((sessionId) => ({
            event: UserSessionRevokedEvent,
            payload: { userId, sessionId, reason: 'password-changed', revokedAt: now },
          })),
        ]);
        await tx.audit?.([
          {
            action: PasswordAuditActions.changed.action,
            organizationId: null,
            actor: { type: 'user', id: userId, display: user.email },
            target: { type: 'user', id: userId, display: user.email },
            ip: context.ip ?? null,
            userAgent: context.userAgent ?? null,
            traceId: context.traceId ?? null,
            metadata: { sessionsEnded: ended.length },
          },
        ]);
      });
      logger.info('password changed by its user', { userId });
    },
  };

  return { reset, change };
}
