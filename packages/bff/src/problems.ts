import { registerProblemCodes } from '@idt/problem';

/**
 * Error codes of `@idt/bff` (SPEC 7.3 and SPEC-NOTES "BFF"), answered as
 * problem documents by the BFF's own routes and its API proxy.
 */
export const BffCodes = registerProblemCodes('@idt/bff', {
  'Bff.CsrfInvalid': {
    kind: 'Forbidden',
    description: 'The x-csrf-token header (or the csrfToken of a beacon) does not match the session.',
  },
  'Bff.SessionMissing': { kind: 'Unauthenticated', description: 'No signed-in session; sign in at /bff/login.' },
  'Bff.SessionRefreshFailed': {
    kind: 'Unauthenticated',
    description: 'The session could not be refreshed and has ended; sign in again.',
  },
  'Bff.LoginTransactionInvalid': {
    kind: 'Validation',
    description: 'The sign-in transaction is missing, expired or does not match; start again at /bff/login.',
  },
  'Bff.LoginHostMismatch': {
    kind: 'Validation',
    description:
      'The sign-in started on another host name than the one it came back to (the redirect URI’s), so its cookie is not here; open the app on the redirect URI’s host and sign in again.',
  },
  'Bff.UpstreamUnavailable': { kind: 'Unavailable', description: 'The API behind the BFF did not answer.' },
  'Bff.UpstreamTimeout': {
    kind: 'GatewayTimeout',
    description: 'The API behind the BFF did not answer in time.',
  },
  'Bff.OriginNotAllowed': {
    kind: 'Forbidden',
    description: 'The request comes from a page of another origin.',
  },
});
