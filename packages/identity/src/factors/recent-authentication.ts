import { type Clock, type Principal, systemClock } from '@idt/core';
import { ProblemError, UnauthorizedError } from '@idt/problem';
import { z } from 'zod';
import type { SessionAuthentication } from '../sessions/store.js';
import type { RecoveryCodeVerification, TotpVerification } from './service.js';
import { normalizeTotpCode } from './totp.js';

/**
 * The `reauthentication` member of an account-API change: the password, or
 * a code of the user's authenticator app or one of their recovery codes.
 */
export const ReauthenticationInput = z
  .union([
    z.strictObject({ password: z.string().min(1, 'Enter your password.').max(1024, 'A password has at most 1024 characters.') }),
    z.strictObject({
      code: z
        .string()
        .min(1, 'Enter a code from your authenticator app or a recovery code.')
        .max(64, 'A code has at most 64 characters.'),
    }),
  ])
  .describe(
    'Proof of a recent authentication when the session signed in more than 5 minutes ago: `{ "password": "..." }` or `{ "code": "123456" }` (an authenticator code or a recovery code).',
  );

/** A fresh factor for {@link RecentAuthentication.require}. */
export type Reauthentication = z.infer<typeof ReauthenticationInput>;

/**
 * The recent-authentication rule of account-API changes (second factors,
 * passkeys): the request's session authenticated within 5 minutes, or the
 * body carries a fresh factor.
 */
export interface RecentAuthentication {
  /**
   * Checks the rule and answers the user's id.
   *
   * @throws UnauthorizedError (401) without a signed-in user; ProblemError `Auth.Forbidden` for a
   *   service caller, `Identity.ReauthenticationRequired` (403) when neither holds or the factor is
   *   wrong, `SecondFactor.Locked` (429) while the second step is locked.
   */
  require(principal: Principal | null, reauthentication?: Reauthentication): Promise<string>;
}

/** Options of {@link createRecentAuthentication}. */
export interface RecentAuthenticationOptions {
  /** The sessions service's `authentication` (when the session last authenticated). */
  readonly sessions: { authentication(sessionId: string): Promise<SessionAuthentication | undefined> };
  /** The second-factor service's checks (misses count toward its lock). */
  readonly factors: {
    verifyPassword(userId: string, password: string): Promise<RecoveryCodeVerification>;
    verifyTotp(userId: string, code: string): Promise<TotpVerification>;
    useRecoveryCode(userId: string, code: string): Promise<RecoveryCodeVerification>;
  };
  readonly clock?: Clock;
  /** How recent is recent: 5 minutes by default. */
  readonly maxAgeMs?: number;
}

/**
 * Creates the recent-authentication check the account API's changes call
 * before they change a factor.
 *
 * @example
 * const recent = createRecentAuthentication({ sessions, factors });
 * const userId = await recent.require(ctx.principal, ctx.body.reauthentication);
 */
export function createRecentAuthentication(options: RecentAuthenticationOptions): RecentAuthentication {
  const clock = options.clock ?? systemClock;
  const maxAgeMs = options.maxAgeMs ?? 5 * 60_000;

  async function fresh(userId: string, factor: Reauthentication): Promise<TotpVerification> {
    if ('password' in factor) return options.factors.verifyPassword(userId, factor.password);
    return normalizeTotpCode(factor.code) !== undefined
      ? options.factors.verifyTotp(userId, factor.code)
      : options.factors.useRecoveryCode(userId, factor.code);
  }

  return {
    async require(principal, reauthentication) {
      if (!principal) throw new UnauthorizedError('A valid credential is required.', { 'www-authenticate': 'Bearer' });
      if (principal.kind !== 'user' || !principal.userId) {
        throw new ProblemError('Auth.Forbidden', 'Account security belongs to users; sign in as one.');
      }
      const { userId } = principal;
      if (reauthentication) {
        const outcome = await fresh(userId, reauthentication);
        if (outcome === 'ok') return userId;
        if (outcome === 'locked') {
          throw new ProblemError('SecondFactor.Locked', undefined, { headers: { 'retry-after': '300' } });
        }
        throw new ProblemError(
          'Identity.ReauthenticationRequired',
          outcome === 'replayed'
            ? 'That code was already used; wait for the next one.'
            : 'The password or code is wrong; nothing was changed.',
        );
      }
      if (principal.sessionId) {
        const session = await options.sessions.authentication(principal.sessionId);
        if (session && session.userId === userId) {
          const age = clock.now().getTime() - new Date(session.authenticatedAt).getTime();
          if (age <= maxAgeMs) return userId;
        }
      }
      throw new ProblemError('Identity.ReauthenticationRequired');
    },
  };
}
