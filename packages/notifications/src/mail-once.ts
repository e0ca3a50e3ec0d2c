import type { Clock, Mailer } from '@idt/core';
import type { NotificationStore } from './store.js';

/** Sends a message once per source key (an event id and purpose) and recipient. */
export type MailOnce = (sourceKey: string, message: Parameters<Mailer['send']>[0]) => Promise<void>;

/**
 * The one way the notifications module's event handlers mail: the outbox
 * delivers an event at least once, so every mail sent is recorded per
 * source key and recipient before the next goes out, and a repeat sends
 * nothing.
 *
 * @example
 * const mailOnce = createMailOnce({ store, mailer, clock });
 * await mailOnce(`${event.id}:password-reset-link`, { to, subject, text });
 */
export function createMailOnce(options: {
  readonly store: Pick<NotificationStore, 'wasMailed' | 'recordMail'>;
  readonly mailer: Mailer;
  readonly clock: Clock;
}): MailOnce {
  const { store, mailer, clock } = options;
  return async (sourceKey, message) => {
    const recipient = message.to.toLowerCase();
    if (await store.wasMailed(sourceKey, recipient)) return;
    await mailer.send(message);
    await store.recordMail(sourceKey, recipient, clock.now().toISOString());
  };
}
