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

/** The part of a nodemailer transport the mailers use. */
export interface MailTransport {
  sendMail(options: SendMailOptions & { newline?: string }): Promise<{ message?: unknown }>;
  close(): void;
}

/**
 * A nodemailer transport made on first use: nodemailer is loaded when the
 * first message is sent, not when the server starts (it is about 35 modules
 * that most processes never need between two mails).
 */
export function lazyTransport(options: unknown): { get(): Promise<MailTransport>; close(): void } {
  let transport: Promise<MailTransport> | undefined;
  let closed = false;
  return {
    get() {
      transport ??= import('nodemailer').then((loaded) => {
        const nodemailer = (loaded as { default?: typeof loaded }).default ?? loaded;
        return nodemailer.createTransport(options as never) as unknown as MailTransport;
      });
      return transport;
    },
    close() {
      if (closed) return;
      closed = true;
      void transport?.then((created) => created.close()).catch(() => undefined);
    },
  };
}
