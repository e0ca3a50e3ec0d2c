import { registerProblemCodes } from '@idt/problem';

/** Error codes of e-mail verification in `@idt/identity`. */
export const EmailVerificationCodes = registerProblemCodes('@idt/identity', {
  'EmailVerification.InvalidToken': {
    kind: 'Validation',
    description: 'The verification link is invalid, was replaced by a newer one, or was already used.',
  },
  'EmailVerification.TokenExpired': { kind: 'Validation', description: 'The verification link has expired; ask for a new one.' },
  'EmailVerification.AlreadyVerified': { kind: 'Conflict', description: 'Your e-mail address is already verified.' },
});
