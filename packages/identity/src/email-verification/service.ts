import { createHash } from 'node:crypto';
import { type Clock, isUuid, type Logger, newId, silentLogger, systemClock } from '@idt/core';
import type { WindowCounter } from '@idt/core/knex';
import { ProblemError, UnauthorizedError } from '@idt/problem';
import { z } from 'zod';
import { CacheNamespaces } from '../access/cache-namespaces.js';
import { EmailSchema } from '../schemas.js';
import type { TokenMac } from '../tokens.js';
import { UserEmailVerificationRequestedEvent, UserEmailVerifiedEvent } from './events.js';
import type { EmailVerificationConsumption, EmailVerificationStore } from './store.js';

/** The token purpose of verification links. */
export const EMAIL_VERIFICATION_TOKEN_PURPOSE = 'email-verification';

/** Where the confirm page lives, below the sign-in pages' base URL (`{prefix}/connect/verify-email?token=`). */
export const EMAIL_VERIFICATION_PAGE_PATH = '/connect/verify-email';

/** The body of `POST /v1/identity/auth/verify-email/resend`: empty for the signed-in user, or an address. */
export const ResendVerificationInput = z
  .strictObject({
    email: EmailSchema.optional().describe(
      'The address to send a new link to (anonymous callers). Leave it out to send one to the signed-in user.',
    ),
  })
  .optional();

/** Input of {@link EmailVerificationService.resendTo}. */
export type ResendVerificationInput = z.input<typeof ResendVerificationInput>;

/** The body of `POST /v1/identity/auth/verify-email`. */
export const ConfirmEmailVerificationInput = z.strictObject({
  token: z.string().min(1).max(512).meta({ description: 'The token of the mailed link (its `token` query parameter).' }),
});

/** A link still waiting to be used, with its URL: what the verification mail says. */
export interface PendingEmailVerification {
  readonly verificationId: string;
  readonly userId: string;
  /** Lowercase. */
  readonly email: string;
  readonly firstName: string;
  /** ISO 8601; the link stops working then. */
  readonly expiresAt: string;
  /** The confirm page's URL (carries a MAC of the verification id; only its SHA-256 is stored). */
  readonly link: string;
}

/** What a link's token is worth, without using it. */
export type EmailVerificationTokenState = 'valid' | 'expired' | 'invalid';

/** What {@link EmailVerificationService.request} did. */
export type EmailVerificationRequestOutcome =
  /** A link was recorded and `UserEmailVerificationRequestedEvent` published. */
  | 'requested'
  /** The address is verified already: nothing to do. */
  | 'verified'
  /** `ifNoneWorking` and a working link exists: nothing to do. */
  | 'pending'
  /** The user is missing or deactivated. */
  | 'inactive';

/** Options of {@link createEmailVerificationService}. */
export interface EmailVerificationServiceOptions {
  readonly store: EmailVerificationStore;
  readonly counter: WindowCounter;
  readonly tokens: TokenMac;
  /** The base URL of the sign-in pages (prefix included): links point to {@link EMAIL_VERIFICATION_PAGE_PATH} below it. */
  readonly authUrl: string;
  readonly clock?: Clock;
  readonly logger?: Logger;
  /** How long a link works; 24 hours by default. */
  readonly linkLifetimeMs?: number;
  /** New links per address per window; 3 by default. */
  readonly maxRequests?: number;
  /** The window of {@link maxRequests}; 15 minutes by default. */
  readonly windowMs?: number;
}

/**
 * Verified e-mail addresses: a single-use link valid 24 hours, mailed after
 * self-registration and on request, flips the account's `emailVerified`
 * (the `email_verified` claim). The link's token is derived from the
 * verification id with the server's MAC key and stored only as its SHA-256;
 * a new link replaces the user's earlier one.
 */
export interface EmailVerificationService {
  /**
   * Records a new link for an active user whose address is not verified and
   * publishes `UserEmailVerificationRequestedEvent` (the notifications module
   * mails it), in one transaction. Not rate-limited: for the module's own
   * triggers (registration). With `ifNoneWorking`, does nothing while a
   * working link exists (an event handler delivered twice mails once).
   */
  request(userId: string, options?: { readonly ifNoneWorking?: boolean }): Promise<EmailVerificationRequestOutcome>;
  /**
   * A new link for the signed-in user (the resend route and the sign-in page's "send a new link").
   *
   * @throws ProblemError `EmailVerification.AlreadyVerified` (409), `RateLimit.Exceeded` (429, `retry-after`)
   *   past 3 links per address per 15 minutes.
   * @throws UnauthorizedError when the user is missing or deactivated.
   */
  resendForUser(userId: string): Promise<void>;
  /**
   * A new link for the account using `email`, if there is an active one whose
   * address is not verified; answers the same, in about the same time,
   * whatever the address (the link is recorded after the answer).
   *
   * @throws ProblemError `Validation.Failed` (400), `RateLimit.Exceeded` (429,
   *   counted per address whether or not an account uses it).
   */
  resendTo(email: string): Promise<void>;
  /** What a link's token is worth now (the confirm page asks before showing its button); consumes nothing. */
  inspect(token: string): Promise<EmailVerificationTokenState>;
  /**
   * Uses a link: consumes it (exactly one concurrent use wins), marks the
   * address verified, evicts the user's cached claims and publishes
   * `UserEmailVerifiedEvent`, in one transaction. A link of an address the
   * account no longer uses is invalid.
   *
   * @throws ProblemError `EmailVerification.TokenExpired` (400) after 24 hours,
   *   `EmailVerification.InvalidToken` (400) for a forged, replaced, used or stale link.
   */
  confirm(token: string): Promise<{ userId: string; email: string }>;
  /** Whether the active user's address is verified (false for a missing or deactivated user). */
  isVerified(userId: string): Promise<boolean>;
  /**
   * The unused link `verificationId` of `userId`, or `null` once it was
   * used, replaced, expired or pruned (the mail handler then sends nothing).
   */
  pendingVerification(verificationId: string, userId: string): Promise<PendingEmailVerification | null>;
  /** The confirm page's URL for a verification id. */
  verificationLink(verificationId: string): string;
  /** Deletes used and expired links; returns how many. */
  prune(): Promise<number>;
}

/** Thrown inside a transaction to roll it back with a known outcome. */
class Rollback extends Error {
  constructor(readonly outcome: 'invalid') {
    super('rollback');
  }
}

const sha256 = (value: string) => createHash('sha256').update(value, 'utf8').digest('hex');

/**
 * Creates the e-mail verification service.
 *
 * @example
 * const verification = createEmailVerificationService({ store, counter, tokens, authUrl });
 * await verification.request(userId);
 * const { userId } = await verification.confirm(token);
 */
export function createEmailVerificationService(options: EmailVerificationServiceOptions): EmailVerificationService {
  const { store, counter, tokens } = options;
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? silentLogger;
  const linkLifetimeMs = options.linkLifetimeMs ?? 86_400_000;
  const maxRequests = options.maxRequests ?? 3;
  const windowMs = options.windowMs ?? 15 * 60_000;
  const base = options.authUrl.replace(/\/+$/, '');

  const verificationLink = (verificationId: string) =>
    `${base}${EMAIL_VERIFICATION_PAGE_PATH}?token=${encodeURIComponent(tokens.issue(EMAIL_VERIFICATION_TOKEN_PURPOSE, verificationId))}`;

  /** The verification id and token hash a well-formed, genuine token names. */
  function parse(token: string): { verificationId: string; tokenHash: string } | undefined {
    if (typeof token !== 'string' || token.length === 0 || token.length > 512) return undefined;
    const verificationId = tokens.verify(EMAIL_VERIFICATION_TOKEN_PURPOSE, token);
    if (!verificationId || !isUuid(verificationId)) return undefined;
    return { verificationId, tokenHash: sha256(token) };
  }

  async function admit(email: string): Promise<void> {
    const decision = await counter.hit(`email-verification:${email}`, maxRequests, windowMs);
    if (!decision.allowed) {
      throw new ProblemError(
        'RateLimit.Exceeded',
        `Too many verification links for this address; retry in ${decision.retryAfterSeconds} seconds.`,
        { headers: { 'retry-after': String(decision.retryAfterSeconds) } },
      );
    }
  }

  async function request(userId: string, requestOptions: { readonly ifNoneWorking?: boolean } = {}) {
    const now = clock.now();
    const at = now.toISOString();
    const id = newId();
    return store.transaction(async (tx): Promise<EmailVerificationRequestOutcome> => {
      const user = await tx.lockUser(userId);
      if (!user) return 'inactive';
      if (user.emailVerified) return 'verified';
      // Under the user's lock: two deliveries of one registration event record one link.
      if (requestOptions.ifNoneWorking && (await tx.hasPending(userId, at))) return 'pending';
      const verification = {
        id,
        userId,
        email: user.email.toLowerCase(),
        tokenHash: sha256(tokens.issue(EMAIL_VERIFICATION_TOKEN_PURPOSE, id)),
        createdAt: at,
        expiresAt: new Date(now.getTime() + linkLifetimeMs).toISOString(),
      };
      await tx.replace(verification);
      await tx.publish([
        {
          event: UserEmailVerificationRequestedEvent,
          payload: { userId, verificationId: id, email: verification.email, expiresAt: verification.expiresAt },
        },
      ]);
      return 'requested';
    });
  }

  return {
    request: (userId, requestOptions) => request(userId.toLowerCase(), requestOptions),

    async resendForUser(userId) {
      const user = await store.findUser(userId.toLowerCase());
      if (user?.status !== 'active') throw new UnauthorizedError('The account is missing or deactivated.');
      if (user.emailVerified) throw new ProblemError('EmailVerification.AlreadyVerified');
      await admit(user.email.toLowerCase());
      const outcome = await request(user.id);
      if (outcome === 'inactive') throw new UnauthorizedError('The account is missing or deactivated.');
      if (outcome === 'verified') throw new ProblemError('EmailVerification.AlreadyVerified');
    },

    async resendTo(email) {
      const address = EmailSchema.parse(email);
      await admit(address);
      const user = await store.findUserByEmail(address);
      if (user?.status !== 'active' || user.emailVerified) return;
      // Not awaited: the answer must not take longer when the address has an account that needs a link.
      request(user.id)
        .then((outcome) => logger.debug('verification link requested by address', { userId: user.id, outcome }))
        .catch((error: unknown) => logger.warn('could not record a verification link', { userId: user.id, error }));
    },

    async inspect(token) {
      const parsed = parse(token);
      if (!parsed) return 'invalid';
      const verification = await store.find(parsed.verificationId);
      if (!verification || verification.consumedAt !== null || verification.tokenHash !== parsed.tokenHash) return 'invalid';
      if (new Date(verification.expiresAt).getTime() <= clock.now().getTime()) return 'expired';
      const user = await store.findUser(verification.userId);
      if (user?.status !== 'active' || user.email.toLowerCase() !== verification.email) return 'invalid';
      return 'valid';
    },

    async confirm(token) {
      const parsed = parse(token);
      if (!parsed) throw new ProblemError('EmailVerification.InvalidToken');
      const at = clock.now().toISOString();
      let consumed: EmailVerificationConsumption;
      try {
        consumed = await store.transaction(async (tx) => {
          const result = await tx.consume(parsed, at);
          if (result.outcome !== 'consumed') return result;
          const { userId, email } = result.verification;
          const marked = await tx.markVerified(userId, email, at);
          // Rolls the consumption back: a link of an address the account left stays unusable, and nothing changes.
          if (marked === 'mismatch') throw new Rollback('invalid');
          if (marked === 'verified') {
            await tx.evict([{ namespace: CacheNamespaces.users, key: userId }]);
            await tx.publish([{ event: UserEmailVerifiedEvent, payload: { userId, email, verifiedAt: at } }]);
          }
          return result;
        });
      } catch (error) {
        if (error instanceof Rollback) throw new ProblemError('EmailVerification.InvalidToken');
        throw error;
      }
      if (consumed.outcome === 'expired') throw new ProblemError('EmailVerification.TokenExpired');
      if (consumed.outcome === 'invalid') throw new ProblemError('EmailVerification.InvalidToken');
      return { userId: consumed.verification.userId, email: consumed.verification.email };
    },

    async isVerified(userId) {
      const user = await store.findUser(userId.toLowerCase());
      return user?.status === 'active' && user.emailVerified;
    },

    async pendingVerification(verificationId, userId) {
      if (!isUuid(verificationId)) return null;
      const verification = await store.find(verificationId.toLowerCase());
      if (!verification || verification.consumedAt !== null || verification.userId !== userId.toLowerCase()) return null;
      if (new Date(verification.expiresAt).getTime() <= clock.now().getTime()) return null;
      const user = await store.findUser(verification.userId);
      if (user?.status !== 'active' || user.emailVerified || user.email.toLowerCase() !== verification.email) return null;
      return {
        verificationId: verification.id,
        userId: verification.userId,
        email: verification.email,
        firstName: user.firstName,
        expiresAt: verification.expiresAt,
        link: verificationLink(verification.id),
      };
    },

    verificationLink,

    prune: () => store.prune(clock.now().toISOString()),
  };
}
