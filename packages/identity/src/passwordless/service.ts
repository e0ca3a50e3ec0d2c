import { randomInt } from 'node:crypto';
import { type Clock, constantTimeEqual, isUuid, type Logger, type Mailer, newId, silentLogger, systemClock } from '@idt/core';
import type { WindowCounter } from '@idt/core/knex';
import { ProblemError } from '@idt/problem';
import { z } from 'zod';
import { CacheNamespaces } from '../access/cache-namespaces.js';
import { EmailSchema } from '../schemas.js';
import type { SessionRecord, SessionService, StartSessionOptions } from '../sessions/service.js';
import type { TokenMac } from '../tokens.js';
import type { PasswordlessKind, PasswordlessStore } from './store.js';

/** The token purpose of magic links. */
export const MAGIC_LINK_TOKEN_PURPOSE = 'magic-link';
/**
 * The token purpose of magic links that open a sign-in page (`linkPath`):
 * only {@link PasswordlessService.consumeMagicLink} takes them, so such a
 * link cannot start a session through the API and skip the page's later steps.
 */
const MAGIC_LINK_PAGE_TOKEN_PURPOSE = 'magic-link-page';
const CODE_MAC_PURPOSE = 'passwordless-code';

/** A path on this site to land on after sign-in: starts with one `/`, no backslashes or control characters. */
export const ReturnToSchema = z
  .string()
  .max(2000, 'A return path has at most 2000 characters.')
  .refine((value) => value.startsWith('/') && !value.startsWith('//') && !/[\\\p{Cc}]/u.test(value), {
    message: 'Use a path on this site that starts with a single /.',
  })
  .meta({ example: '/account' });

/** The body of `POST /v1/identity/auth/passwordless/magic-link`. */
export const MagicLinkRequestInput = z.object({ email: EmailSchema, returnTo: ReturnToSchema.optional() });
/** Input of {@link PasswordlessService.requestMagicLink}. */
export type MagicLinkRequestInput = z.input<typeof MagicLinkRequestInput>;

/** The body of `POST /v1/identity/auth/passwordless/code`. */
export const CodeRequestInput = z.object({ email: EmailSchema });
/** Input of {@link PasswordlessService.requestCode}. */
export type CodeRequestInput = z.input<typeof CodeRequestInput>;

/** The body of `POST /v1/identity/auth/passwordless/code/verify`. */
export const CodeVerifyInput = z.object({
  email: EmailSchema,
  code: z
    .string({ error: 'Enter the 6-digit code.' })
    .trim()
    .regex(/^\d{6}$/, 'Enter the 6-digit code.')
    .meta({ example: '042137' }),
});
/** Input of {@link PasswordlessService.verifyCode}. */
export type CodeVerifyInput = z.input<typeof CodeVerifyInput>;

/** A successful passwordless sign-in: the new session and its cookie value. */
export interface PasswordlessSignIn {
  readonly userId: string;
  readonly session: SessionRecord;
  /** The session cookie value (set it with `sessions.sessionCookieHeader`). */
  readonly cookieValue: string;
  /** The magic link's return path, if it had one. */
  readonly returnTo: string | null;
}

/** Options of {@link createPasswordlessService}. */
export interface PasswordlessServiceOptions {
  readonly store: PasswordlessStore;
  readonly sessions: Pick<SessionService, 'start'>;
  readonly counter: WindowCounter;
  readonly tokens: TokenMac;
  readonly mailer: Mailer;
  /** The public base URL of the API: magic links point here. */
  readonly publicBaseUrl: string;
  readonly clock?: Clock;
  readonly logger?: Logger;
  /** Requests per e-mail address per window, links and codes together; 3 by default. */
  readonly maxRequests?: number;
  /** The request window; 15 minutes by default. */
  readonly windowMs?: number;
  /** Magic-link lifetime; 15 minutes by default. */
  readonly linkLifetimeMs?: number;
  /** Code lifetime; 10 minutes by default. */
  readonly codeLifetimeMs?: number;
  /** Verification attempts per code; 5 by default. */
  readonly maxCodeAttempts?: number;
}

/**
 * Passwordless sign-in by magic link or one-time code. Requests answer the
 * same whether or not an account uses the address (only active users get
 * mail), share one per-address limit, and each link or code signs in once.
 */
export interface PasswordlessService {
  /**
   * Mails a sign-in link to the address when an active user has it. With
   * `options.linkPath` (a path on this site: a sign-in page) the link opens
   * that page with `?token=` instead of the API's confirmation page, and the
   * page consumes it with {@link consumeMagicLink} (no session is started
   * for it: the page starts one when every step of its sign-in is done).
   *
   * @throws ProblemError `Validation.Failed` (400), `RateLimit.Exceeded` (429, `retry-after` header).
   */
  requestMagicLink(input: MagicLinkRequestInput, options?: { readonly linkPath?: string }): Promise<void>;
  /**
   * Mails a 6-digit code to the address when an active user has it; earlier codes stop working.
   *
   * @throws ProblemError `Validation.Failed` (400), `RateLimit.Exceeded` (429, `retry-after` header).
   */
  requestCode(input: CodeRequestInput): Promise<void>;
  /**
   * Signs in with a magic link's token: consumes it, marks the address
   * verified and starts a session.
   *
   * @throws ProblemError `Passwordless.InvalidToken` (400) for a forged, expired or used link.
   */
  verifyMagicLink(token: string, context?: Omit<StartSessionOptions, 'amr'>): Promise<PasswordlessSignIn>;
  /**
   * Consumes a magic link's token (exactly one use wins) and marks the
   * address verified, without starting a session: for a sign-in page that
   * has more steps to run before the session starts.
   *
   * @throws ProblemError `Passwordless.InvalidToken` (400) for a forged, expired or used link.
   */
  consumeMagicLink(token: string): Promise<{ readonly userId: string; readonly returnTo: string | null }>;
  /**
   * Signs in with a one-time code (at most 5 attempts per code): consumes it,
   * marks the address verified and starts a session.
   *
   * @throws ProblemError `Validation.Failed` (400) for a malformed body,
   *   `Passwordless.InvalidCode` (400) for an unknown address, a wrong, expired, used or dead code.
   */
  verifyCode(input: CodeVerifyInput, context?: Omit<StartSessionOptions, 'amr'>): Promise<PasswordlessSignIn>;
  /**
   * Consumes a one-time code like {@link verifyCode} without starting a
   * session: for a sign-in page that has more steps to run first.
   *
   * @throws ProblemError as {@link verifyCode}.
   */
  consumeCode(input: CodeVerifyInput): Promise<{ readonly userId: string }>;
  /** Deletes consumed and expired requests; returns how many. */
  prune(): Promise<number>;
}

/**
 * Creates the passwordless service.
 *
 * @example
 * const passwordless = createPasswordlessService({ store, sessions, counter, tokens, mailer, publicBaseUrl });
 * await passwordless.requestCode({ email: 'ada@example.com' });
 * const { session, cookieValue } = await passwordless.verifyCode({ email: 'ada@example.com', code: '042137' });
 */
export function createPasswordlessService(options: PasswordlessServiceOptions): PasswordlessService {
  const { store, sessions, counter, tokens, mailer } = options;
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? silentLogger;
  const maxRequests = options.maxRequests ?? 3;
  const windowMs = options.windowMs ?? 15 * 60_000;
  const linkLifetimeMs = options.linkLifetimeMs ?? 15 * 60_000;
  const codeLifetimeMs = options.codeLifetimeMs ?? 10 * 60_000;
  const maxAttempts = options.maxCodeAttempts ?? 5;
  const base = options.publicBaseUrl.replace(/\/+$/, '');

  // The code's HMAC under the server secret, bound to its request id; the token's MAC part only.
  const codeMac = (id: string, code: string) => {
    const token = tokens.issue(CODE_MAC_PURPOSE, `${id}:${code}`);
    return token.slice(token.lastIndexOf('.') + 1);
  };

  async function admit(email: string): Promise<void> {
    const decision = await counter.hit(`passwordless:${email}`, maxRequests, windowMs);
    if (!decision.allowed) {
      throw new ProblemError(
        'RateLimit.Exceeded',
        `Too many sign-in requests for this address; retry in ${decision.retryAfterSeconds} seconds.`,
        { headers: { 'retry-after': String(decision.retryAfterSeconds) } },
      );
    }
  }

  function sendInBackground(message: Parameters<Mailer['send']>[0]) {
    // Not awaited: the answer must not take longer when the address has an account.
    mailer.send(message).catch((error: unknown) => logger.warn('could not send a passwordless sign-in mail', { error }));
  }

  async function record(userId: string, kind: PasswordlessKind, extra: { codeHash?: (id: string) => string; returnTo?: string }) {
    const now = clock.now();
    const id = newId();
    const request = {
      id,
      userId,
      kind,
      codeHash: extra.codeHash ? extra.codeHash(id) : null,
      returnTo: extra.returnTo ?? null,
      createdAt: now.toISOString(),
      expiresAt: new Date(now.getTime() + (kind === 'link' ? linkLifetimeMs : codeLifetimeMs)).toISOString(),
    };
    await store.transaction(async (tx) => {
      // Only the newest code works: a new one retires the user's earlier outstanding codes.
      if (kind === 'code') await tx.retireCodes(userId);
      await tx.insert(request);
    });
    return id;
  }

  /** Consumes a request (exactly one caller wins) and evicts the user, whose e-mail address it verified. */
  function consume(id: string, kind: PasswordlessKind, now: string) {
    return store.transaction(async (tx) => {
      const consumed = await tx.consume(id, kind, now);
      if (consumed) await tx.evict([{ namespace: CacheNamespaces.users, key: consumed.userId }]);
      return consumed;
    });
  }

  async function consumeLink(token: string, purpose: string) {
    const id = typeof token === 'string' ? tokens.verify(purpose, token) : undefined;
    if (!id || !isUuid(id)) throw new ProblemError('Passwordless.InvalidToken');
    const consumed = await consume(id, 'link', clock.now().toISOString());
    if (!consumed) throw new ProblemError('Passwordless.InvalidToken');
    return consumed;
  }

  async function consumeCode(input: CodeVerifyInput) {
    const { email, code } = CodeVerifyInput.parse(input);
    const now = clock.now().toISOString();
    const user = await store.findActiveUserByEmail(email);
    const candidate = user ? await store.findCode(user.id, now, maxAttempts) : undefined;
    if (!candidate) {
      codeMac(newId(), code); // the same work as a real check
      throw new ProblemError('Passwordless.InvalidCode');
    }
    if (!(await store.recordAttempt(candidate.id, now, maxAttempts))) throw new ProblemError('Passwordless.InvalidCode');
    if (!constantTimeEqual(candidate.codeHash, codeMac(candidate.id, code))) throw new ProblemError('Passwordless.InvalidCode');
    const consumed = await consume(candidate.id, 'code', now);
    if (!consumed) throw new ProblemError('Passwordless.InvalidCode');
    return consumed;
  }

  async function signIn(
    consumed: { userId: string; returnTo: string | null },
    context: Omit<StartSessionOptions, 'amr'>,
    amr: string,
  ): Promise<PasswordlessSignIn> {
    const started = await sessions.start(consumed.userId, { ...context, amr: [amr] });
    return { userId: consumed.userId, session: started.session, cookieValue: started.cookieValue, returnTo: consumed.returnTo };
  }

  return {
    async requestMagicLink(input, options = {}) {
      const { email, returnTo } = MagicLinkRequestInput.parse(input);
      const linkPath = options.linkPath === undefined ? undefined : ReturnToSchema.parse(options.linkPath);
      await admit(email);
      const user = await store.findActiveUserByEmail(email);
      if (!user) return;
      const landing = linkPath ?? returnTo;
      const id = await record(user.id, 'link', landing ? { returnTo: landing } : {});
      const token = encodeURIComponent(tokens.issue(linkPath ? MAGIC_LINK_PAGE_TOKEN_PURPOSE : MAGIC_LINK_TOKEN_PURPOSE, id));
      const link = linkPath
        ? `${new URL(base).origin}${linkPath}?token=${token}`
        : `${base}/v1/identity/auth/passwordless/magic-link/verify?token=${token}`;
      sendInBackground({
        to: user.email,
        subject: 'Your sign-in link',
        text: [
          `Hello ${user.firstName},`,
          '',
          'Open this link within 15 minutes to sign in. It works once.',
          link,
          '',
          "If you didn't ask to sign in, ignore this message.",
        ].join('\n'),
        headers: { 'X-Idt-Template': 'passwordless-magic-link' },
      });
    },
    async requestCode(input) {
      const { email } = CodeRequestInput.parse(input);
      await admit(email);
      const user = await store.findActiveUserByEmail(email);
      if (!user) return;
      const code = String(randomInt(0, 1_000_000)).padStart(6, '0');
      await record(user.id, 'code', { codeHash: (id) => codeMac(id, code) });
      sendInBackground({
        to: user.email,
        subject: `Your sign-in code: ${code}`,
        text: [
          `Hello ${user.firstName},`,
          '',
          `Your sign-in code is ${code}. It expires in 10 minutes and works once.`,
          '',
          "If you didn't ask to sign in, ignore this message.",
        ].join('\n'),
        headers: { 'X-Idt-Template': 'passwordless-code' },
      });
    },
    async verifyMagicLink(token, context = {}) {
      return signIn(await consumeLink(token, MAGIC_LINK_TOKEN_PURPOSE), context, 'email');
    },
    async consumeMagicLink(token) {
      const consumed = await consumeLink(token, MAGIC_LINK_PAGE_TOKEN_PURPOSE);
      return { userId: consumed.userId, returnTo: consumed.returnTo };
    },
    async verifyCode(input, context = {}) {
      return signIn(await consumeCode(input), context, 'otp');
    },
    async consumeCode(input) {
      return { userId: (await consumeCode(input)).userId };
    },
    prune() {
      return store.prune(clock.now().toISOString());
    },
  };
}
