import { registerProblemCodes } from '@idt/problem';

/** Error codes owned by `@idt/oidc`. */
export const OidcCodes = registerProblemCodes('@idt/oidc', {
  'Identity.PlatformOnlyScope': {
    kind: 'BusinessRule',
    description: 'A platform-only scope can be granted only by a platform administrator.',
  },
  'Identity.ClientAlreadySuspended': { kind: 'BusinessRule', description: 'The client is already suspended.' },
  'Identity.ClientNotSuspended': { kind: 'BusinessRule', description: 'The client is not suspended.' },
  'Clients.NotFound': { kind: 'NotFound', description: 'No such client exists in this organization.' },
  'Clients.IdTaken': { kind: 'Conflict', description: 'A client with this name already exists in the organization.' },
  'Clients.OrganizationInactive': { kind: 'BusinessRule', description: 'The organization is suspended.' },
  'Authorize.UnknownReturnUrl': { kind: 'NotFound', description: 'The return URL names no pending sign-in.' },
});
