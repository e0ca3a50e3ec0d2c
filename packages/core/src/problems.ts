import { registerProblemCodes } from '@idt/problem';

/** Error codes owned by `@idt/core`. */
export const CoreCodes = registerProblemCodes('@idt/core', {
  'Tenant.Required': { kind: 'Forbidden', description: 'This operation needs an organization; none resolved for the caller.' },
  'Tenant.Forbidden': { kind: 'Forbidden', description: 'The caller is not an active member of the requested organization.' },
  'Http.BodyAlreadyRead': {
    kind: 'Validation',
    description: 'Another middleware read the request body before idt and it cannot be rebuilt; mount idt before body parsers.',
  },
  'Health.Unavailable': { kind: 'Unavailable', description: 'A dependency of the service is unavailable.' },
  'Database.Unavailable': { kind: 'Unavailable', description: 'The database is unreachable; retry shortly.' },
  'Logs.OriginNotAllowed': {
    kind: 'Forbidden',
    description: 'Browser log events are taken only from pages of this host: the Origin header is missing or another origin.',
  },
});
