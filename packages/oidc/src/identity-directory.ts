import { type Clock, type Principal, systemClock } from '@idt/core';
import { CredentialCodes, type IdentityServices, PasswordRejectedError } from '@idt/identity';
import { ProblemError } from '@idt/problem';
import type {
  AccountDirectory,
  PasskeyOutcome,
  PasskeyRefusal,
  PasswordSetOutcome,
  SecondFactorStatus,
} from './interactions/directory.js';

/**
 * The account directory of the sign-in pages and the provider over the
 * identity module's services: password and passwordless sign-in, claims,
 * memberships and enrollment, sign-in sessions.
 *
 * @example
 * const directory = createIdentityDirectory(idt.services.identity);
 */
export function createIdentityDirectory(
  identity: IdentityServices,
  // D: passkeys (a re-authentication on the passkeys page is recorded at the clock's time)
  options: { readonly clock?: Clock } = {},
): AccountDirectory {
  const clock = options.clock ?? systemClock;
  const { sessions, passwordless } = identity.credentials;
  return {
    verifyPassword: (email, password) => identity.signIn.authenticate(email, password),
    accountClaims: (userId, organizationId) => identity.signIn.claims(userId, organizationId),
    activeOrganizations: (userId) => identity.signIn.activeOrganizations(userId),
    membershipState: (userId, organizationId) => identity.signIn.membershipState(userId, organizationId),
    enroll: (userId, organizationId) => identity.accounts.memberships.enroll(userId, organizationId),
    async startSession(userId, context) {
      const started = await sessions.start(userId, context);
      return { sessionId: started.session.id, userId, cookieValue: started.cookieValue, expiresAt: started.session.expiresAt };
    },
    async findSession(cookieValue) {
      const session = await sessions.findLiveByCookie(cookieValue);
      return session && { sessionId: session.id, userId: session.userId };
    },
    requestMagicLink: (email, linkPath) => passwordless.requestMagicLink({ email }, { linkPath }),
    requestCode: (email) => passwordless.requestCode({ email }),
    // C2: first factors consumed without a session; the sign-in pipeline starts it when every step is done.
    async consumeCode(email, code) {
      try {
        return (await passwordless.consumeCode({ email, code })).userId;
      } catch (error) {
        // A wrong, expired or used code is an answer for the page, not a failure.
        if (error instanceof ProblemError && error.code === CredentialCodes['Passwordless.InvalidCode']) return undefined;
        throw error;
      }
    },
    async consumeMagicLink(token) {
      try {
        const consumed = await passwordless.consumeMagicLink(token);
        return { userId: consumed.userId, linkPath: consumed.returnTo };
      } catch (error) {
        if (error instanceof ProblemError && error.code === CredentialCodes['Passwordless.InvalidToken']) return undefined;
        throw error;
      }
    },
    // C2: second factors (C1), the organization's MFA policy (B), passkeys (D), re-authentication (C1).
    async secondFactors(userId): Promise<SecondFactorStatus> {
      const status = await identity.factors.status(userId);
      return { totp: status.totp, recoveryCodesLeft: status.recoveryCodesLeft, passkeys: status.passkeys };
    },
    verifyTotp: (userId, code) => identity.factors.verifyTotp(userId, code),
    useRecoveryCode: (userId, code) => identity.factors.useRecoveryCode(userId, code),
    beginTotp: (userId, label) => identity.factors.beginTotp(userId, label),
    async confirmTotp(userId, enrolmentId, code, request) {
      try {
        return await identity.factors.confirmTotp(userId, enrolmentId, code, request);
      } catch (error) {
        // A code that does not match, a lockout or an enrolment that expired is an answer for the page.
        if (!(error instanceof ProblemError) || error.status < 400 || error.status >= 500) throw error;
        if (error.status === 429) return 'locked';
        return error.code.endsWith('EnrolmentNotFound') ? 'expired' : 'wrong';
      }
    },
    async organizationRequiresMfa(organizationId) {
      return (await identity.verification.organizationPolicy.get(organizationId)).requireMfa;
    },
    async markAuthenticated(sessionId, amr, at, audit) {
      await sessions.markAuthenticated(sessionId, amr, at, audit);
    },
    // C1: the account page's two-step section
    async regenerateRecoveryCodes(userId, request) {
      try {
        return await identity.factors.regenerateRecoveryCodes(userId, request);
      } catch (error) {
        if (error instanceof ProblemError && error.code === 'SecondFactor.NotEnrolled') return undefined;
        throw error;
      }
    },
    async removeTotp(userId, request) {
      try {
        await identity.factors.removeTotp(userId, request);
        return 'removed';
      } catch (error) {
        if (error instanceof ProblemError && error.code === 'Identity.SecondFactorRequired') return 'required';
        if (error instanceof ProblemError && error.code === 'SecondFactor.NotEnrolled') return 'not-enrolled';
        throw error;
      }
    },
    async reauthenticate(userId, sessionId, proof) {
      const principal: Principal = {
        kind: 'user',
        subject: userId,
        userId,
        clientId: null,
        organizationId: null,
        permissions: new Set(),
        scopes: new Set(),
        sessionId,
        name: null,
        credentialId: null,
      };
      try {
        await identity.recentAuthentication.require(principal, proof);
        return 'ok';
      } catch (error) {
        if (error instanceof ProblemError && error.code === 'SecondFactor.Locked') return 'locked';
        if (error instanceof ProblemError && error.code === 'Identity.ReauthenticationRequired')
          return proof ? 'wrong' : 'required';
        throw error;
      }
    },
    // A: passwords
    requestPasswordReset: (email, context) => identity.passwords.reset.request({ email }, context.ip ? { ip: context.ip } : {}),
    passwordResetState: (token) => identity.passwords.reset.inspect(token),
    // The request's facts go on the audit record (the actor is the user).
    resetPassword: (token, newPassword, request) =>
      passwordOutcome(identity.passwords.reset.confirm({ token, newPassword }, request)),
    changePassword: (userId, sessionId, currentPassword, newPassword, request) =>
      passwordOutcome(identity.passwords.change.change(userId, { currentPassword, newPassword }, { ...request, sessionId })),
    // B: verified e-mail
    async needsEmailVerification(userId, organizationId) {
      const { email, organizationPolicy } = identity.verification;
      if (!(await organizationPolicy.requiresVerifiedEmail(organizationId))) return false;
      return !(await email.isVerified(userId));
    },
    async resendEmailVerification(userId) {
      try {
        await identity.verification.email.resendForUser(userId);
        return { outcome: 'sent' };
      } catch (error) {
        if (!(error instanceof ProblemError)) throw error;
        if (error.code === 'EmailVerification.AlreadyVerified') return { outcome: 'already-verified' };
        if (error.code === 'RateLimit.Exceeded') {
          return { outcome: 'rate-limited', retryAfterSeconds: Number(error.headers?.['retry-after'] ?? 900) || 900 };
        }
        throw error;
      }
    },
    emailVerificationState: (token) => identity.verification.email.inspect(token),
    async verifyEmail(token) {
      try {
        await identity.verification.email.confirm(token);
        return 'verified';
      } catch (error) {
        if (error instanceof ProblemError && error.code === 'EmailVerification.TokenExpired') return 'expired';
        if (error instanceof ProblemError && error.code === 'EmailVerification.InvalidToken') return 'invalid';
        throw error;
      }
    },
    // D: passkeys
    passkeyRequestOptions: (interactionUid, userId) =>
      identity.passkeys.authenticationOptions({ interaction: interactionUid }, userId),
    async verifyPasskey(interactionUid, response, userId) {
      try {
        const passed = await identity.passkeys.authenticate({ interaction: interactionUid }, response, userId);
        return { userId: passed.userId, amr: passed.amr };
      } catch (error) {
        const refusal = passkeyRefusal(error);
        if (refusal === 'expired') return 'expired';
        if (refusal === 'rejected' || refusal === 'invalid') return 'rejected';
        throw error;
      }
    },
    listPasskeys: (userId) => identity.passkeys.list(userId),
    async passkeyAccess(userId, sessionId, reauthentication) {
      try {
        await identity.recentAuthentication.require(sessionPrincipal(userId, sessionId), reauthentication);
        // A password just checked: the session counts as re-authenticated for the next 5 minutes.
        if (reauthentication) await sessions.markAuthenticated(sessionId, ['pwd'], clock.now());
        return 'done';
      } catch (error) {
        return refusalOrThrow(error);
      }
    },
    async passkeyCreationOptions(userId, sessionId) {
      try {
        await identity.recentAuthentication.require(sessionPrincipal(userId, sessionId));
        return await identity.passkeys.registrationOptions(userId, sessionId);
      } catch (error) {
        return refusalOrThrow(error);
      }
    },
    registerPasskey: (userId, sessionId, response, name, request) =>
      passkeyChange(userId, sessionId, () =>
        identity.passkeys.register(
          userId,
          sessionId,
          {
            ...(response as object),
            ...(name === undefined ? {} : { name }),
          } as Parameters<typeof identity.passkeys.register>[2],
          request,
        ),
      ),
    renamePasskey: (userId, sessionId, passkeyId, name, request) =>
      passkeyChange(userId, sessionId, () => identity.passkeys.rename(userId, passkeyId, { name }, request)),
    removePasskey: (userId, sessionId, passkeyId, request) =>
      passkeyChange(userId, sessionId, () => identity.passkeys.remove(userId, passkeyId, request)),
  };

  /** D: a passkey change after the recent-authentication rule; refusals the page explains are answers. */
  async function passkeyChange(userId: string, sessionId: string, change: () => Promise<unknown>): Promise<PasskeyOutcome> {
    try {
      await identity.recentAuthentication.require(sessionPrincipal(userId, sessionId));
      await change();
      return 'done';
    } catch (error) {
      return refusalOrThrow(error);
    }
  }
}

/** D: the principal of a request authenticated by a sign-in session's cookie (the account pages'). */
function sessionPrincipal(userId: string, sessionId: string): Principal {
  return {
    kind: 'user',
    subject: userId,
    userId,
    clientId: null,
    organizationId: null,
    permissions: new Set(),
    scopes: new Set(),
    sessionId,
    name: null,
    credentialId: null,
  };
}

const PASSKEY_REFUSALS: Readonly<Record<string, PasskeyRefusal>> = {
  'Passkey.ChallengeExpired': 'expired',
  'Passkey.Rejected': 'rejected',
  'Passkey.AlreadyRegistered': 'duplicate',
  'Passkey.LimitReached': 'limit',
  'Passkey.NotFound': 'not-found',
  'Validation.Failed': 'invalid',
  'Identity.SecondFactorRequired': 'second-factor-required',
  'Identity.ReauthenticationRequired': 'reauthenticate',
  'SecondFactor.Locked': 'locked',
};

/** D: the page's reading of a passkey refusal; `undefined` for a failure. */
function passkeyRefusal(error: unknown): PasskeyRefusal | undefined {
  if (error instanceof ProblemError) return PASSKEY_REFUSALS[error.code];
  // The service's input schemas (zod): a response that is not a WebAuthn credential, a bad name.
  if (Array.isArray((error as { issues?: unknown } | null)?.issues)) return 'invalid';
  return undefined;
}

/** D: the refusal, or the error thrown again when it is a failure. */
function refusalOrThrow(error: unknown): PasskeyRefusal {
  const refusal = passkeyRefusal(error);
  if (!refusal) throw error;
  return refusal;
}

/** A: the page's outcome of setting a password; refusals the pages explain are answers, not failures. */
async function passwordOutcome(work: Promise<unknown>): Promise<PasswordSetOutcome> {
  try {
    await work;
    return { outcome: 'set' };
  } catch (error) {
    if (error instanceof PasswordRejectedError) return { outcome: 'rejected', reasons: error.reasons };
    // The services' input schemas (zod): an unusable token, or a password far too long.
    const issues = (error as { issues?: Array<{ path: PropertyKey[]; message: string }> } | null)?.issues;
    if (Array.isArray(issues)) {
      if (issues.some((issue) => issue.path[0] === 'token')) return { outcome: 'invalid' };
      return { outcome: 'rejected', reasons: [...new Set(issues.map((issue) => issue.message))] };
    }
    if (!(error instanceof ProblemError)) throw error;
    switch (error.code) {
      case 'PasswordReset.InvalidToken':
        return { outcome: 'invalid' };
      case 'PasswordReset.TokenExpired':
        return { outcome: 'expired' };
      case 'PasswordChange.WrongPassword':
        return { outcome: 'wrong-password' };
      case 'RateLimit.Exceeded':
        return { outcome: 'rate-limited' };
      case 'Validation.Failed':
        return { outcome: 'rejected', reasons: Object.values(error.errors ?? {}).flat() };
      default:
        throw error;
    }
  }
}
