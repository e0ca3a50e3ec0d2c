import { registerProblemCodes } from '@idt/problem';

/** Error codes of the forgotten-password and password-change flows of `@idt/identity`. */
export const PasswordResetCodes = registerProblemCodes('@idt/identity', {
  'PasswordReset.InvalidToken': {
    kind: 'Validation',
    description: 'The reset link is invalid, was replaced by a newer one, or was already used.',
  },
  'PasswordReset.TokenExpired': { kind: 'Validation', description: 'The reset link has expired; ask for a new one.' },
  'PasswordReset.Unavailable': {
    kind: 'Unavailable',
    description: 'No module of this deployment mails reset links (compose @idt/notifications).',
  },
  'PasswordChange.WrongPassword': { kind: 'Validation', description: 'The current password is wrong.' },
});
