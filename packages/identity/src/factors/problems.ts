import { registerProblemCodes } from '@idt/problem';

/** Error codes of second factors (TOTP, recovery codes) and recent authentication in `@idt/identity`. */
export const SecondFactorCodes = registerProblemCodes('@idt/identity', {
  'Identity.ReauthenticationRequired': {
    kind: 'Forbidden',
    description:
      'This change needs a recent sign-in: sign in again, or send `reauthentication` with your password or a second-factor code.',
  },
  'Identity.SecondFactorRequired': {
    kind: 'BusinessRule',
    description: 'An organization you belong to requires a second factor; add another one before removing this one.',
  },
  'SecondFactor.InvalidCode': { kind: 'Validation', description: 'The code is wrong, expired or already used.' },
  'SecondFactor.EnrolmentNotFound': {
    kind: 'Validation',
    description: 'The authenticator set-up expired or is not yours; start again.',
  },
  'SecondFactor.NotEnrolled': { kind: 'NotFound', description: 'There is no authenticator app on this account.' },
  'SecondFactor.Locked': {
    kind: 'RateLimited',
    description: 'Too many wrong codes: the second step is locked for 5 minutes.',
  },
});
