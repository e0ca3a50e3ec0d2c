/**
 * Mail adapters of idt: SMTP for deployments and `.eml` files for
 * development and tests, chosen from the configuration by
 * {@link createMailerFromConfig}. Needs the optional peer dependency
 * `nodemailer`. The `Mailer` port itself is exported by `@idt/core`.
 *
 * @packageDocumentation
 */
import type { IdtConfig } from './config/config.js';
import type { Logger } from './logger.js';
import { createFileMailer } from './mail/file.js';
import type { Mailer } from './mail/mailer.js';
import { createSmtpMailer } from './mail/smtp.js';

export type { FileMailerOptions, MailboxMessage, ReadMailboxOptions } from './mail/file.js';
export { createFileMailer, parseEml, readMailbox } from './mail/file.js';
export type { SmtpMailer, SmtpMailerOptions } from './mail/smtp.js';
export { createSmtpMailer } from './mail/smtp.js';

/**
 * The mailer the configuration asks for: SMTP when `IDT_SMTP_URL` is set,
 * else `.eml` files under `${IDT_DATA_DIR}/mail` (refused in Production by
 * `loadConfig`).
 *
 * @example
 * const mailer = createMailerFromConfig(config, logger);
 */
export function createMailerFromConfig(config: Pick<IdtConfig, 'mail'>, logger?: Logger): Mailer {
  const { mail } = config;
  if (mail.transport === 'smtp') {
    if (!mail.smtpUrl) throw new TypeError('The smtp mail transport needs an SMTP URL (IDT_SMTP_URL)');
    return createSmtpMailer({ url: mail.smtpUrl, from: mail.from });
  }
  return createFileMailer({ directory: mail.directory, from: mail.from, ...(logger ? { logger } : {}) });
}
