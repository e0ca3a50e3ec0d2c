import { registerProblemCodes } from '@idt/problem';

/** Error codes owned by `@idt/identity`. */
export const IdentityCodes = registerProblemCodes('@idt/identity', {
  'Setup.AlreadyCompleted': { kind: 'Conflict', description: 'Setup is already complete; the first administrator exists.' },
  'Identity.EmailTaken': { kind: 'Conflict', description: 'An account with this e-mail address already exists.' },
});
