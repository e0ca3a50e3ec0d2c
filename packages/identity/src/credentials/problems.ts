import { registerProblemCodes } from '@idt/problem';

/**
 * Error codes of the credentials half of `@idt/identity`: sessions, API
 * keys, e-mail change and passwordless sign-in. The e-mail change codes are
 * rendered as the short bodies of SPEC 4.5 on their own routes, and as
 * problem documents anywhere else.
 */
export const CredentialCodes = registerProblemCodes('@idt/identity', {
  'Sessions.NotFound': { kind: 'NotFound', description: 'No active session of yours has this id.' },
  'ApiKeys.NotFound': { kind: 'NotFound', description: 'No API key of yours in this organization has this id.' },
  'ApiKeys.LimitReached': { kind: 'BusinessRule', description: 'You already have the maximum number of live API keys.' },
  'ApiKeys.ScopeExceedsPermissions': {
    kind: 'Forbidden',
    description: 'An API key cannot carry a scope beyond your own permissions.',
  },
  'ApiKeys.OrganizationRequired': {
    kind: 'Forbidden',
    description: 'API keys belong to an organization; sign in to one first.',
  },
  'EmailChange.SameEmail': { kind: 'Validation', description: 'The new e-mail address is the current one.' },
  'EmailChange.InvalidToken': { kind: 'Validation', description: 'The confirmation link is invalid or was already used.' },
  'EmailChange.Unavailable': {
    kind: 'Unavailable',
    description: 'No module of this deployment mails confirmation links (compose @idt/notifications).',
  },
  'EmailChange.TokenExpired': { kind: 'Validation', description: 'The confirmation link has expired; request a new one.' },
  'Passwordless.InvalidToken': { kind: 'Validation', description: 'The sign-in link is invalid, expired or already used.' },
  'Passwordless.InvalidCode': { kind: 'Validation', description: 'The code is wrong, expired or already used.' },
});
