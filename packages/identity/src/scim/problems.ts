import { registerProblemCodes } from '@idt/problem';

/** Error codes of the SCIM token and role-mapping API (the `/scim/v2` endpoints answer SCIM errors instead). */
export const ScimCodes = registerProblemCodes('@idt/identity', {
  'Scim.TokenNotFound': { kind: 'NotFound', description: 'No such live SCIM token in this organization.' },
  'Scim.TokenLimitReached': { kind: 'BusinessRule', description: 'An organization has at most 10 live SCIM tokens.' },
});
