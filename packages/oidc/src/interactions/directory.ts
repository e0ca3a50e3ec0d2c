import type { AuditEntry, AuditRequestFacts } from '@idt/core';
import type { AccountClaims } from '../provider/create-provider.js';

/** A membership state as authorization sees it (SPEC 3.4). */
export type MembershipState = 'active' | 'pending' | 'suspended' | 'denied' | 'not_a_member';

/** A started sign-in session. */
export interface StartedSession {
  readonly sessionId: string;
  readonly userId: string;
  /** The value of the sign-in session cookie (shown once, stored hashed). */
  readonly cookieValue: string;
  readonly expiresAt: string;
}

/**
 * What the sign-in pages and the provider need from the identity module.
 * The knex wiring implements it over `@idt/identity`'s services.
 *
 * The methods that change an account (second factors, passwords, passkeys)
 * take the page request's facts (`request`: client address, user agent,
 * trace id) for the change's audit record; its actor is the user.
 */
export interface AccountDirectory {
  /** The user id when the address and password match an active account; `undefined` otherwise (same timing either way). */
  verifyPassword(email: string, password: string): Promise<string | undefined>;
  /** Claims of an active user working in an organization (or none); `undefined` for deactivated or unknown users. */
  accountClaims(userId: string, organizationId: string | null): Promise<AccountClaims | undefined>;
  /** The user's active memberships, for the organization choice. */
  activeOrganizations(userId: string): Promise<Array<{ id: string; name: string }>>;
  /** The membership state, without side effects. */
  membershipState(userId: string, organizationId: string): Promise<MembershipState>;
  /**
   * Runs the organization's enrollment policy for a user signing in to one of
   * its clients (open: joins; approval required: records a pending request;
   * invitation only: not a member) and returns the resulting state.
   */
  enroll(userId: string, organizationId: string): Promise<MembershipState>;
  /**
   * Starts a sign-in session (the five-session limit applies). `audit`
   * gives the entries to record in the session's transaction (the sign-in
   * itself), from the new session's id.
   */
  startSession(
    userId: string,
    context: { ip?: string; userAgent?: string; amr: string[]; audit?: (sessionId: string) => readonly AuditEntry[] },
  ): Promise<StartedSession>;
  /** The active session a sign-in cookie names. */
  findSession(cookieValue: string): Promise<{ sessionId: string; userId: string } | undefined>;
  /**
   * Passwordless sign-in (magic link and one-time code share one counter per
   * address). C2: the mailed link opens `linkPath` (a sign-in page) with
   * `?token=`, which the page consumes with {@link consumeMagicLink}.
   */
  requestMagicLink(email: string, linkPath: string): Promise<void>;
  requestCode(email: string): Promise<void>;
  // C2: the first factors consume their code or link without starting a session (the pipeline starts it at the end).
  /** Consumes a one-time code; the user id, or `undefined` when the code is wrong, expired or used. */
  consumeCode(email: string, code: string): Promise<string | undefined>;
  /** Consumes a magic link's token; the user and the page it was mailed for, or `undefined` when it is forged, expired or used. */
  consumeMagicLink(token: string): Promise<{ userId: string; linkPath: string | null } | undefined>;
  // C2: second factors, the organization's MFA policy and re-authentication (C1's factors, B's policy, D's passkeys).
  /** The user's second factors: TOTP, recovery codes left and passkeys (0 without the passkeys feature). */
  secondFactors(userId: string): Promise<SecondFactorStatus>;
  /** Checks a TOTP code (a code works once; 5 misses in 5 minutes lock the second step for 5 minutes). */
  verifyTotp(userId: string, code: string): Promise<'ok' | 'wrong' | 'replayed' | 'locked'>;
  /** Uses a recovery code (each works once). */
  useRecoveryCode(userId: string, code: string): Promise<'ok' | 'wrong' | 'locked'>;
  /** Starts a TOTP enrolment: the pending secret, its `otpauth://` URI and QR code (SVG). */
  beginTotp(userId: string, label: string): Promise<TotpEnrolment>;
  /**
   * Confirms a TOTP enrolment with a first code: the recovery codes (shown
   * once) when they were made with it; `'wrong'` for a code that does not
   * match, `'locked'` after too many misses, `'expired'` for an enrolment
   * that is gone (begin again).
   */
  confirmTotp(
    userId: string,
    enrolmentId: string,
    code: string,
    request: AuditRequestFacts,
  ): Promise<{ recoveryCodes: string[] | null } | 'wrong' | 'locked' | 'expired'>;
  /** Whether the organization requires a second factor of its members (`requireMfa`). */
  organizationRequiresMfa(organizationId: string): Promise<boolean>;
  /**
   * Records a re-authentication in an existing sign-in session (its `amr`
   * and time), and `audit`'s entries in the same transaction.
   */
  markAuthenticated(sessionId: string, amr: string[], at: Date, audit?: readonly AuditEntry[]): Promise<void>;
  // C1: the account page's two-step section (`/connect/account/two-step`)
  /** A new set of 10 recovery codes (shown once; the old set ends), or `undefined` without a second factor to recover. */
  regenerateRecoveryCodes(userId: string, request: AuditRequestFacts): Promise<string[] | undefined>;
  /**
   * Removes the user's authenticator app (their recovery codes too when no
   * passkey is left): `'required'` when it is the last second factor and an
   * organization of the user requires MFA (nothing changes), `'not-enrolled'` without one.
   */
  removeTotp(userId: string, request: AuditRequestFacts): Promise<'removed' | 'required' | 'not-enrolled'>;
  /**
   * The recent-authentication rule of account-security changes: `'ok'` when
   * the session authenticated within 5 minutes or `proof` (the password, or
   * an authenticator or recovery code) is right; `'required'` without proof,
   * `'wrong'` for a wrong one (it counts toward the second-step lock), `'locked'` while locked.
   */
  reauthenticate(
    userId: string,
    sessionId: string,
    proof?: AccountReauthentication,
  ): Promise<'ok' | 'required' | 'wrong' | 'locked'>;
  // A: passwords (the forgotten-password, reset and change-password pages)
  /**
   * Asks for a password reset link: the same answer whether or not the address has an account.
   *
   * @throws ProblemError `RateLimit.Exceeded` (per address and per client address), `PasswordReset.Unavailable`.
   */
  requestPasswordReset(email: string, context: { ip?: string }): Promise<void>;
  /** What a reset link's token is worth now, without using it. */
  passwordResetState(token: string): Promise<'valid' | 'expired' | 'invalid'>;
  /** Sets a new password with a reset link's token; every session of the user ends. */
  resetPassword(token: string, newPassword: string, request: AuditRequestFacts): Promise<PasswordSetOutcome>;
  /** Changes a signed-in user's password (the current one required); the user's other sessions end. */
  changePassword(
    userId: string,
    sessionId: string,
    currentPassword: string,
    newPassword: string,
    request: AuditRequestFacts,
  ): Promise<PasswordSetOutcome>;
  // B: verified e-mail (the sign-in gate, its "send a new link", and the confirm page)
  /**
   * Whether signing in (to `organizationId`, or before any organization is
   * decided with `null`) needs a verified address that `userId` does not
   * have: the global `IDT_REQUIRE_VERIFIED_EMAIL` or the organization's `requireVerifiedEmail`.
   */
  needsEmailVerification(userId: string, organizationId: string | null): Promise<boolean>;
  /** Mails the user a new verification link (3 per address per 15 minutes). */
  resendEmailVerification(userId: string): Promise<EmailVerificationResend>;
  /** What a verification link's token is worth now, without using it. */
  emailVerificationState(token: string): Promise<'valid' | 'expired' | 'invalid'>;
  /** Uses a verification link: the address becomes verified. */
  verifyEmail(token: string): Promise<'verified' | 'expired' | 'invalid'>;
  // D: passkeys (the sign-in step, the second step's option and the account page)
  /**
   * Options for `navigator.credentials.get()` bound to the interaction:
   * discoverable (`userId` null: a first factor) or the user's passkeys (a
   * second factor); `undefined` when passkeys are not composed.
   */
  passkeyRequestOptions(interactionUid: string, userId: string | null): Promise<object | undefined>;
  /** Verifies an assertion against the interaction's challenge (used up either way). */
  verifyPasskey(interactionUid: string, response: unknown, userId: string | null): Promise<PasskeySignIn>;
  /** The user's passkeys, oldest first. */
  listPasskeys(userId: string): Promise<readonly AccountPasskey[]>;
  /**
   * Whether the session may change passkeys now (it authenticated within 5
   * minutes); with `reauthentication`, checks it and marks the session re-authenticated.
   */
  passkeyAccess(userId: string, sessionId: string, reauthentication?: { password: string }): Promise<PasskeyOutcome>;
  /** Options for `navigator.credentials.create()` bound to the session. */
  passkeyCreationOptions(userId: string, sessionId: string): Promise<object | PasskeyRefusal>;
  registerPasskey(
    userId: string,
    sessionId: string,
    response: unknown,
    name: string | undefined,
    request: AuditRequestFacts,
  ): Promise<PasskeyOutcome>;
  renamePasskey(
    userId: string,
    sessionId: string,
    passkeyId: string,
    name: string,
    request: AuditRequestFacts,
  ): Promise<PasskeyOutcome>;
  removePasskey(userId: string, sessionId: string, passkeyId: string, request: AuditRequestFacts): Promise<PasskeyOutcome>;
}

/** D: a passkey as the account page lists it. */
export interface AccountPasskey {
  readonly id: string;
  readonly name: string;
  readonly createdAt: string;
  readonly lastUsedAt: string | null;
  /** `singleDevice` (device-bound) or `multiDevice` (may be synced). */
  readonly deviceType: string;
  readonly backedUp: boolean;
}

/** D: what an assertion proved: the user and the RFC 8176 methods, or why it was refused. */
export type PasskeySignIn = { readonly userId: string; readonly amr: readonly string[] } | 'expired' | 'rejected';

/** D: why a passkey change (or the right to make one) was refused. */
export type PasskeyRefusal =
  | 'expired'
  | 'rejected'
  | 'invalid'
  | 'duplicate'
  | 'limit'
  | 'not-found'
  | 'second-factor-required'
  | 'reauthenticate'
  | 'locked'
  | 'unavailable';

/** D: what a passkey change did. */
export type PasskeyOutcome = 'done' | PasskeyRefusal;

/** B: what asking for a new verification link did. */
export type EmailVerificationResend =
  | { readonly outcome: 'sent' | 'already-verified' }
  | { readonly outcome: 'rate-limited'; readonly retryAfterSeconds: number };

/** A: what setting a password from a page did. */
export type PasswordSetOutcome =
  | { readonly outcome: 'set' }
  /** The reset link is forged, replaced or used (`invalid`), or too old (`expired`). */
  | { readonly outcome: 'invalid' | 'expired' }
  /** The current password is wrong, or too many attempts (`rate-limited`). */
  | { readonly outcome: 'wrong-password' | 'rate-limited' }
  /** The password policy refused the new password. */
  | { readonly outcome: 'rejected'; readonly reasons: readonly string[] };

/** C1: a fresh factor proving a signed-in user is still there. */
export type AccountReauthentication = { readonly password: string } | { readonly code: string };

/** C2: a user's second factors, as the sign-in pipeline sees them. */
export interface SecondFactorStatus {
  readonly totp: boolean;
  readonly recoveryCodesLeft: number;
  readonly passkeys: number;
}

/** C2: a TOTP enrolment begun (its secret sealed at rest until confirmed). */
export interface TotpEnrolment {
  readonly enrolmentId: string;
  readonly secret: string;
  readonly otpauthUri: string;
  readonly qrSvg: string;
}
