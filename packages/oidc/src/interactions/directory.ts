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
  /** Starts a sign-in session (the five-session limit applies). */
  startSession(userId: string, context: { ip?: string; userAgent?: string; amr: string[] }): Promise<StartedSession>;
  /** The active session a sign-in cookie names. */
  findSession(cookieValue: string): Promise<{ sessionId: string; userId: string } | undefined>;
  /** Passwordless sign-in (magic link and one-time code share one counter per address). */
  requestMagicLink(email: string, returnTo: string): Promise<void>;
  requestCode(email: string): Promise<void>;
  /** Verifies a one-time code and starts a session; `undefined` when the code is wrong, expired or used. */
  verifyCode(email: string, code: string, context: { ip?: string; userAgent?: string }): Promise<StartedSession | undefined>;
}
