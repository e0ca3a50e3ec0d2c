import { registerProblemCodes } from '@idt/problem';

/** Error codes owned by `@idt/notifications`. */
export const NotificationsCodes = registerProblemCodes('@idt/notifications', {
  'Notifications.NotFound': {
    kind: 'NotFound',
    description: 'No such notification of yours in this organization.',
  },
  'Notifications.RecipientNotMember': {
    kind: 'BusinessRule',
    description: 'Notifications go to active members of your organization only.',
  },
});
