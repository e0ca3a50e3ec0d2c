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

/** The `code` of {@link NodemailerMissingError}, for callers that tell their own users what to do. */
export const NODEMAILER_MISSING = 'IDT_NODEMAILER_MISSING';

/**
 * Thrown by the SMTP and file mailers when they send their first message and
 * the optional peer dependency `nodemailer` is not installed.
 */
export class NodemailerMissingError extends Error {
  /** {@link NODEMAILER_MISSING}. */
  readonly code = NODEMAILER_MISSING;
  constructor(options?: { cause?: unknown }) {
    super(
      'Sending mail (SMTP, or .eml files in development) needs the nodemailer package, which is not installed: npm install nodemailer, or give createIdt a mailer of your own',
      options,
    );
    this.name = 'NodemailerMissingError';
  }
}

/** Whether `error` is the failure to find `nodemailer` itself (not a module nodemailer needs). */
function isNodemailerNotFound(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  return (
    (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') &&
    /(Cannot find (package|module) ['"]nodemailer['"])|(['"]nodemailer['"] imported from)/.test(String(message))
  );
}

/**
 * A nodemailer transport made on first use: nodemailer is loaded when the
 * first message is sent, not when the server starts (it is about 35 modules
 * that most processes never need between two mails).
 *
 * @throws NodemailerMissingError from `get()` when nodemailer is not installed.
 */
export function lazyTransport(
  options: unknown,
  load: () => Promise<unknown> = () => import('nodemailer'),
): { get(): Promise<MailTransport>; close(): void } {
  let transport: Promise<MailTransport> | undefined;
  let closed = false;
  return {
    get() {
      transport ??= load().then(
        (loaded) => {
          const module = loaded as { default?: unknown; createTransport?: unknown };
          const nodemailer = (module.default ?? module) as { createTransport(options: never): unknown };
          return nodemailer.createTransport(options as never) as unknown as MailTransport;
        },
        (error: unknown) => {
          throw isNodemailerNotFound(error) ? new NodemailerMissingError({ cause: error }) : error;
        },
      );
      return transport;
    },
    close() {
      if (closed) return;
      closed = true;
      void transport?.then((created) => created.close()).catch(() => undefined);
    },
  };
}
