import { registerProblemCodes } from '@idt/problem';

/** Error codes of the password policy of `@idt/identity`. */
export const PasswordPolicyCodes = registerProblemCodes('@idt/identity', {
  'Identity.PasswordRejected': {
    kind: 'BusinessRule',
    description: 'The password is refused by the password policy (too short or long, common, weak, breached, or personal).',
  },
});
