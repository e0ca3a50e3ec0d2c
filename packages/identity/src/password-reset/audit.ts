import { defineAuditActions } from '@idt/core';

/** The audit actions of passwords: recorded on the platform trail (a user's password is not an organization's). */
export const PasswordAuditActions = defineAuditActions('identity', {
  reset: {
    action: 'identity.password.reset',
    description:
      'A password was set without the old one: with a mailed link (actor: the user) or by an operator (`idt users reset-password`). Every session and token of the user ended.',
    targetType: 'user',
  },
  changed: {
    action: 'identity.password.changed',
    description: 'A signed-in user changed their password (with the current one); their other sessions ended.',
    targetType: 'user',
  },
});
