import { registerProblemCodes } from './registry.js';

/**
 * The status-generic codes of SPEC 7.3, registered by this package so every
 * host has them.
 */
export const GenericCodes = registerProblemCodes('@idt/problem', {
  'Validation.Failed': { kind: 'Validation', description: 'One or more fields are invalid.' },
  'Auth.Unauthenticated': { kind: 'Unauthenticated', description: 'A valid credential is required.' },
  'Auth.Forbidden': { kind: 'Forbidden', description: 'The caller lacks the permission this operation needs.' },
  'Http.NotFound': { kind: 'NotFound', description: 'No resource exists at this address.' },
  'Http.MethodNotAllowed': { kind: 'MethodNotAllowed', description: 'The resource does not support this method.' },
  'Http.ClientError': { kind: 'Validation', description: 'The request is malformed.' },
  'RateLimit.Exceeded': { kind: 'RateLimited', description: 'Too many requests; retry after the time given.' },
  'Setup.Required': { kind: 'Unavailable', description: 'The service needs its first administrator.' },
  'Server.Error': { kind: 'Failure', description: 'The request failed on the server.' },
});

/** A status-generic code of SPEC 7.3. */
export type GenericCode = keyof typeof GenericCodes;
