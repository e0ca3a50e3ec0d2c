import type { SendMailOptions } from 'nodemailer';
import { assertMailMessage, type MailMessage } from './mailer.js';

/** A checked {@link MailMessage} as nodemailer's message options, `from` defaulting to the adapter's sender. */
export function nodemailerMessage(message: MailMessage, defaultFrom: string): SendMailOptions {
  assertMailMessage(message);
  return {
    from: message.from ?? defaultFrom,
    to: message.to,
    subject: message.subject,
    text: message.text,
    ...(message.html === undefined ? {} : { html: message.html }),
    ...(message.headers === undefined ? {} : { headers: { ...message.headers } }),
  };
}
