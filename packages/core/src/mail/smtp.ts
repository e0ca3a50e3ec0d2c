import type { Mailer } from './mailer.js';
import { lazyTransport, nodemailerMessage } from './nodemailer-message.js';

/** Options of {@link createSmtpMailer}. */
export interface SmtpMailerOptions {
  /**
   * The server: `smtp://user:password@host:587` (STARTTLS when offered) or
   * `smtps://user:password@host:465` (TLS from the start). Percent-encode
   * reserved characters of the user and password. Query parameters set
   * nodemailer options, e.g. `?requireTLS=true&connectionTimeout=10000`.
   */
  readonly url: string;
  /** The default sender, e.g. `idt <no-reply@example.com>`. */
  readonly from: string;
}

/** A {@link Mailer} over SMTP; {@link close} releases its connections. */
export interface SmtpMailer extends Mailer {
  /** Closes open connections of the transport. */
  close(): void;
}

/**
 * A mailer that hands messages to an SMTP server with nodemailer (an
 * optional peer dependency of `@idt/core`: install `nodemailer` to use it).
 *
 * @example
 * const mailer = createSmtpMailer({ url: 'smtps://idt:secret@mail.example.com:465', from: 'idt <no-reply@example.com>' });
 * await mailer.send({ to: 'ada@example.com', subject: 'Welcome', text: 'Hello Ada' });
 */
export function createSmtpMailer(options: SmtpMailerOptions): SmtpMailer {
  const transport = lazyTransport(options.url);
  return {
    async send(message) {
      await (await transport.get()).sendMail(nodemailerMessage(message, options.from));
    },
    close() {
      transport.close();
    },
  };
}
