/** One outgoing e-mail. */
export interface MailMessage {
  /** The recipient: `ada@example.com` or `Ada Lovelace <ada@example.com>`. */
  readonly to: string;
  readonly subject: string;
  /** The plain-text body; always sent. */
  readonly text: string;
  /** An optional HTML alternative of {@link text}. */
  readonly html?: string;
  /** The sender; the mailer's configured default when absent. */
  readonly from?: string;
  /** Extra headers, e.g. `{ 'X-Idt-Template': 'email-confirmation' }`. */
  readonly headers?: Readonly<Record<string, string>>;
}

/**
 * The port through which idt sends e-mail. Adapters live in `@idt/core/mail`:
 * SMTP for deployments, `.eml` files for development and tests.
 */
export interface Mailer {
  /**
   * Delivers one message to the transport. Resolves once the transport
   * accepted it; rejects when it did not (or the message is malformed).
   */
  send(message: MailMessage): Promise<void>;
}

const LINE_BREAK = /[\r\n]/;
const HEADER_NAME = /^[!-9;-~]+$/;

/**
 * Checks the parts of a message that end up in headers: a recipient is
 * present and no header value can break out of its line.
 *
 * @throws TypeError naming the offending field.
 */
export function assertMailMessage(message: MailMessage): void {
  if (typeof message.to !== 'string' || message.to.trim() === '') throw new TypeError('Mail message has no recipient');
  if (typeof message.text !== 'string') throw new TypeError('Mail message has no text body');
  const single: Array<[string, string | undefined]> = [
    ['to', message.to],
    ['subject', message.subject],
    ['from', message.from],
  ];
  for (const [name, value] of single) {
    if (value !== undefined && LINE_BREAK.test(value)) throw new TypeError(`Mail ${name} must not contain line breaks`);
  }
  for (const [name, value] of Object.entries(message.headers ?? {})) {
    if (!HEADER_NAME.test(name)) throw new TypeError(`Mail header name "${name}" is not a valid header name`);
    if (LINE_BREAK.test(value)) throw new TypeError(`Mail header ${name} must not contain line breaks`);
  }
}

/** A {@link Mailer} that keeps messages in memory; see {@link createMemoryMailer}. */
export interface MemoryMailer extends Mailer {
  /** Every message sent so far, oldest first. */
  readonly messages: MailMessage[];
}

/**
 * A mailer that keeps every message in memory, for unit tests of code that
 * sends mail.
 *
 * @example
 * const mailer = createMemoryMailer();
 * await service.requestEmailChange(userId, 'new@example.com');
 * expect(mailer.messages.at(-1)?.to).toBe('new@example.com');
 */
export function createMemoryMailer(): MemoryMailer {
  const messages: MailMessage[] = [];
  return {
    messages,
    async send(message) {
      assertMailMessage(message);
      messages.push(structuredClone(message));
    },
  };
}
