import { registerProblemCodes } from '@idt/problem';

/** Error codes owned by `@idt/core`. */
export const CoreCodes = registerProblemCodes('@idt/core', {
  'Tenant.Required': { kind: 'Forbidden', description: 'This operation needs an organization; none resolved for the caller.' },
  'Tenant.Forbidden': { kind: 'Forbidden', description: 'The caller is not an active member of the requested organization.' },
  'Health.Unavailable': { kind: 'Unavailable', description: 'A dependency of the service is unavailable.' },
});
