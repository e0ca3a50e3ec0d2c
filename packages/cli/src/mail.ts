import type { IdtConfig, Logger, Mailer } from '@idt/core';
import { CliError } from './errors.js';

/** The `code` of the error `@idt/core`'s mailers throw when `nodemailer` is not installed. */
const NODEMAILER_MISSING = 'IDT_NODEMAILER_MISSING';

/** Whether `error` says that `nodemailer` is not installed (from `@idt/core`'s mailers, or `createIdt`'s check). */
export function isNodemailerMissing(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === NODEMAILER_MISSING;
}

/**
 * What a CLI user does when mail is to be sent and `nodemailer` is not
 * installed (`Mail.NodemailerMissing`).
 *
 * @param what what sends the mail: `idt serve`, or the events of a command.
 */
export function nodemailerMissingError(what: string, cause?: unknown): CliError {
  return new CliError(
    'Mail.NodemailerMissing',
    `${what} sends mail (SMTP with IDT_SMTP_URL, else .eml files in the data directory) with the nodemailer package, which is not installed.`,
    {
      hints: [
        'Install it beside @idt/cli: npm install nodemailer (or give the config file a mailer: defineIdtConfig({ mailer, … })).',
      ],
      ...(cause === undefined ? {} : { cause }),
    },
  );
}

/** A command's mailer: {@link Mailer} plus what it could not send. */
export interface CommandMailer extends Mailer {
  /** How many messages were not sent because nodemailer is not installed (their events wait for a server). */
  readonly unsent: number;
}

/**
 * The mailer of a command other than `idt serve`: the one the settings ask
 * for (SMTP with `IDT_SMTP_URL`, else `.eml` files), made when the first
 * message is sent. Most commands send none, so they run without `nodemailer`;
 * a message that finds it missing is counted and fails its event handler,
 * which leaves the event to a running server.
 */
export function createCommandMailer(config: Pick<IdtConfig, 'mail'>, logger: Logger): CommandMailer {
  let mailer: Promise<Mailer> | undefined;
  let unsent = 0;
  return {
    get unsent() {
      return unsent;
    },
    async send(message) {
      mailer ??= import('@idt/core/mail').then((mail) => mail.createMailerFromConfig(config, logger));
      try {
        await (await mailer).send(message);
      } catch (error) {
        if (isNodemailerMissing(error)) unsent += 1;
        throw error;
      }
    },
  };
}

/**
 * A logger without the event bus's warnings about deliveries that failed for
 * want of nodemailer: the command reports those itself, in one line.
 */
export function withoutNodemailerWarnings(logger: Logger): Logger {
  const quiet = (fields: Record<string, unknown> | undefined) => isNodemailerMissing(fields?.error);
  return {
    debug: (message, fields) => logger.debug(message, fields),
    info: (message, fields) => logger.info(message, fields),
    warn: (message, fields) => {
      if (!quiet(fields)) logger.warn(message, fields);
    },
    error: (message, fields) => {
      if (!quiet(fields)) logger.error(message, fields);
    },
    child: (fields) => withoutNodemailerWarnings(logger.child(fields)),
  };
}
