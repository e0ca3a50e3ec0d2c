import { CredentialCodes, type IdentityServices } from '@idt/identity';
import { ProblemError } from '@idt/problem';
import type { AccountDirectory } from './interactions/directory.js';

/**
 * The account directory of the sign-in pages and the provider over the
 * identity module's services: password and passwordless sign-in, claims,
 * memberships and enrollment, sign-in sessions.
 *
 * @example
 * const directory = createIdentityDirectory(idt.services.identity);
 */
export function createIdentityDirectory(identity: IdentityServices): AccountDirectory {
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
    requestMagicLink: (email, returnTo) => passwordless.requestMagicLink({ email, returnTo }),
    requestCode: (email) => passwordless.requestCode({ email }),
    async verifyCode(email, code, context) {
      try {
        const verified = await passwordless.verifyCode({ email, code }, context);
        return {
          sessionId: verified.session.id,
          userId: verified.userId,
          cookieValue: verified.cookieValue,
          expiresAt: verified.session.expiresAt,
        };
      } catch (error) {
        // A wrong, expired or used code is an answer for the page, not a failure.
        if (error instanceof ProblemError && error.code === CredentialCodes['Passwordless.InvalidCode']) return undefined;
        throw error;
      }
    },
  };
}
