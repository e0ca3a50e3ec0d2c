import { registerProblemCodes } from '@idt/problem';

/** Error codes of the audit trail (owned by `@idt/core`). */
export const AuditCodes = registerProblemCodes('@idt/core', {
  'Audit.OrganizationNotFound': {
    kind: 'NotFound',
    description:
      'No audit trail the caller may read: another organization’s, or the platform’s for someone who is not a platform administrator.',
  },
});
