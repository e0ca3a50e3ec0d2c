import { registerProblemCodes } from '@idt/problem';

/** Error codes of passkeys (WebAuthn) in `@idt/identity`. */
export const PasskeyCodes = registerProblemCodes('@idt/identity', {
  'Passkey.ChallengeExpired': {
    kind: 'Validation',
    description:
      'No passkey request is waiting: it expired (after 5 minutes), was used already, or was replaced by a newer one. Start again.',
  },
  'Passkey.Rejected': {
    kind: 'Validation',
    description:
      'The passkey response did not verify: wrong origin or relying party, a bad signature, no user verification, a counter that went back, or a passkey this account does not have.',
  },
  'Passkey.AlreadyRegistered': { kind: 'Conflict', description: 'This passkey is registered already.' },
  'Passkey.NotFound': { kind: 'NotFound', description: 'You have no such passkey.' },
  'Passkey.LimitReached': { kind: 'BusinessRule', description: 'An account holds at most 20 passkeys; remove one first.' },
  'Passkey.SessionRequired': {
    kind: 'Forbidden',
    description: 'Passkeys are managed from a sign-in session (the session cookie, or a token carrying its `sid`).',
  },
});
