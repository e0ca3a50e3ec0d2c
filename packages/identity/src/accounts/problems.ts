import { registerProblemCodes } from '@idt/problem';

/** Error codes of users, organizations, memberships, invitations and roles. */
export const AccountsCodes = registerProblemCodes('@idt/identity', {
  'Identity.UserNotFound': { kind: 'NotFound', description: 'No such user in this organization.' },
  'Identity.OrganizationNotFound': { kind: 'NotFound', description: 'No such organization.' },
  'Identity.MemberNotFound': { kind: 'NotFound', description: 'No such member of this organization.' },
  'Identity.InvitationNotFound': { kind: 'NotFound', description: 'No such invitation in this organization.' },
  'Identity.RoleNotFound': { kind: 'NotFound', description: 'No such custom role in this organization.' },
  'Identity.LastOwner': {
    kind: 'BusinessRule',
    description: 'The last active owner of an organization cannot be removed, suspended or demoted.',
  },
  'Identity.InvalidMembershipTransition': {
    kind: 'BusinessRule',
    description: 'The membership is not in a state that allows this change.',
  },
  'Identity.AlreadyMember': { kind: 'Conflict', description: 'The user is already a member of this organization.' },
  'Identity.MembershipSuspended': {
    kind: 'Conflict',
    description: 'The membership is suspended; an administrator of the organization must reinstate it.',
  },
  'Identity.RoleExceedsPermissions': {
    kind: 'Forbidden',
    description: 'A role cannot grant, and a caller cannot assign, permissions the caller does not hold.',
  },
  'Identity.RoleNameReserved': { kind: 'Conflict', description: 'A built-in role already has this name.' },
  'Identity.RoleNameTaken': { kind: 'Conflict', description: 'A custom role of this organization already has this name.' },
  'Identity.InvitationExists': {
    kind: 'Conflict',
    description: 'A pending invitation to this organization already exists for this e-mail address.',
  },
  'Identity.InvitationInvalid': { kind: 'BusinessRule', description: 'The invitation is invalid, revoked or already used.' },
  'Identity.InvitationExpired': { kind: 'BusinessRule', description: 'The invitation has expired.' },
  'Identity.InvitationNotPending': { kind: 'BusinessRule', description: 'The invitation was already accepted.' },
  'Identity.InvitationEmailMismatch': {
    kind: 'Forbidden',
    description: "The invitation was sent to another e-mail address than the caller's.",
  },
  'Identity.CannotDeactivateSelf': { kind: 'BusinessRule', description: 'You cannot deactivate your own account.' },
  'Identity.UserAlreadyDeactivated': { kind: 'BusinessRule', description: 'The user is already deactivated.' },
  'Identity.UserNotDeactivated': { kind: 'BusinessRule', description: 'The user is not deactivated.' },
});
