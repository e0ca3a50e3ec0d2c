import { mkdir, readdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { mediaTypeOf } from '../http/body.js';
import { newId } from '../ids.js';
import type { Logger } from '../logger.js';
import type { Mailer } from './mailer.js';
import { lazyTransport, nodemailerMessage } from './nodemailer-message.js';

/** Options of {@link createFileMailer}. */
export interface FileMailerOptions {
  /** Where `.eml` files are written; created when missing. */
  readonly directory: string;
  /** The default sender, e.g. `idt <no-reply@localhost>`. */
  readonly from: string;
  /** Receives one `info` line per message with its recipient, subject and file. */
  readonly logger?: Logger;
}

/**
 * A development mailer: writes every message as an RFC 5322 `.eml` file
 * (built by nodemailer, CRLF line endings) named after the time it was sent,
 * and logs where. Open the files with any mail client, or read them back with
 * {@link readMailbox}.
 *
 * @example
 * const mailer = createFileMailer({ directory: './data/mail', from: 'idt <no-reply@localhost>', logger });
 * await mailer.send({ to: 'ada@example.com', subject: 'Confirm your address', text: `Open ${link}` });
 */
export function createFileMailer(options: FileMailerOptions): Mailer {
  const transport = lazyTransport({ streamTransport: true, buffer: true });
  return {
    async send(message) {
      const info = await (await transport.get()).sendMail({ ...nodemailerMessage(message, options.from), newline: 'windows' });
      await mkdir(options.directory, { recursive: true });
      // ISO time for people, a UUIDv7 (time-ordered, monotonic per process) for order and uniqueness.
      const name = `${new Date().toISOString().replace(/[:.]/g, '-')}-${newId()}.eml`;
      const file = join(options.directory, name);
      // Written aside and renamed, so readers never see half a message.
      await writeFile(`${file}.tmp`, info.message as Buffer);
      await rename(`${file}.tmp`, file);
      options.logger?.info('mail written to file', { to: message.to, subject: message.subject, file });
    },
  };
}

/** A message read back by {@link readMailbox}. */
export interface MailboxMessage {
  /** The absolute or relative path of the `.eml` file (as the directory was given). */
  readonly file: string;
  /** The decoded `From` header. */
  readonly from: string;
  /** The decoded `To` header. */
  readonly to: string;
  /** The e-mail addresses of `To`, lower-cased. */
  readonly toAddresses: string[];
  /** The decoded `Subject` header. */
  readonly subject: string;
  /** The decoded plain-text body, `\n` line breaks, without its final line break. */
  readonly text: string;
  /** The decoded HTML body, when the message has one (line breaks as in {@link text}). */
  readonly html?: string;
  /** Every header, names lower-cased, values decoded (the last of repeated headers). */
  readonly headers: Readonly<Record<string, string>>;
}

/** Options of {@link readMailbox}. */
export interface ReadMailboxOptions {
  /** Only messages addressed to this e-mail address (case-insensitive). */
  readonly to?: string;
}

/**
 * Reads the messages a {@link createFileMailer} wrote, oldest first. A
 * missing directory reads as empty. For tests that follow links from mail.
 *
 * @example
 * const [mail] = (await readMailbox(config.mail.directory, { to: 'ada@example.com' })).slice(-1);
 * const link = /https?:\/\/\S+/.exec(mail.text)?.[0];
 */
export async function readMailbox(directory: string, options: ReadMailboxOptions = {}): Promise<MailboxMessage[]> {
  let names: string[];
  try {
    names = await readdir(directory);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
  const messages: MailboxMessage[] = [];
  for (const name of names.filter((entry) => entry.endsWith('.eml')).sort()) {
    const file = join(directory, name);
    const message = { file, ...parseEml(await readFile(file)) };
    if (options.to !== undefined && !message.toAddresses.includes(options.to.trim().toLowerCase())) continue;
    messages.push(message);
  }
  return messages;
}

/**
 * Parses an RFC 5322 message as nodemailer writes it: headers with RFC 2047
 * encoded words, single-part or multipart bodies in 7bit, 8bit,
 * quoted-printable or base64.
 */
export function parseEml(raw: Buffer | string): Omit<MailboxMessage, 'file'> {
  const entity = parseEntity(typeof raw === 'string' ? Buffer.from(raw, 'utf8') : raw);
  const bodies: { text?: string; html?: string } = {};
  collectBodies(entity, bodies);
  const to = entity.headers.to ?? '';
  return {
    from: entity.headers.from ?? '',
    to,
    toAddresses: [...to.matchAll(/[^\s<>,"]+@[^\s<>,"]+/g)].map((match) => match[0].toLowerCase()),
    subject: entity.headers.subject ?? '',
    text: bodies.text ?? '',
    ...(bodies.html === undefined ? {} : { html: bodies.html }),
    headers: entity.headers,
  };
}

interface MimeEntity {
  headers: Record<string, string>;
  body: Buffer;
}

function parseEntity(raw: Buffer): MimeEntity {
  const source = raw.toString('latin1');
  const match = /\r?\n\r?\n/.exec(source);
  const headerText = match ? source.slice(0, match.index) : source;
  const body = match ? raw.subarray(match.index + match[0].length) : Buffer.alloc(0);
  const headers: Record<string, string> = {};
  for (const line of headerText.replace(/\r?\n[ \t]+/g, ' ').split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    // Header bytes are ASCII or UTF-8 (RFC 6532); read them as UTF-8, then decode encoded words.
    const value = Buffer.from(line.slice(colon + 1), 'latin1')
      .toString('utf8')
      .trim();
    headers[line.slice(0, colon).trim().toLowerCase()] = decodeWords(value);
  }
  return { headers, body };
}

function collectBodies(entity: MimeEntity, into: { text?: string; html?: string }): void {
  const contentType = entity.headers['content-type'] ?? 'text/plain';
  const type = mediaTypeOf(contentType);
  if (type.startsWith('multipart/')) {
    const boundary = parameter(contentType, 'boundary');
    if (!boundary) return;
    for (const part of splitMultipart(entity.body, boundary)) collectBodies(parseEntity(part), into);
    return;
  }
  const disposition = (entity.headers['content-disposition'] ?? '').toLowerCase();
  if (disposition.startsWith('attachment')) return;
  if (type !== 'text/plain' && type !== 'text/html') return;
  const bytes = decodeTransfer(entity.body, entity.headers['content-transfer-encoding'] ?? '7bit');
  // Line breaks read as \n; the final one is dropped, since transports end every body with one.
  const text = decodeCharset(bytes, parameter(contentType, 'charset') ?? 'utf-8')
    .replace(/\r\n/g, '\n')
    .replace(/\n$/, '');
  if (type === 'text/plain' && into.text === undefined) into.text = text;
  if (type === 'text/html' && into.html === undefined) into.html = text;
}

function parameter(header: string, name: string): string | undefined {
  const match = new RegExp(`;\\s*${name}\\s*=\\s*(?:"([^"]*)"|([^;\\s]+))`, 'i').exec(header);
  return match ? (match[1] ?? match[2]) : undefined;
}

function splitMultipart(body: Buffer, boundary: string): Buffer[] {
  const source = body.toString('latin1');
  const delimiter = `--${boundary}`;
  const parts: Buffer[] = [];
  let start = source.indexOf(delimiter);
  while (start !== -1) {
    const afterDelimiter = start + delimiter.length;
    if (source.startsWith('--', afterDelimiter)) break;
    const contentStart = source.indexOf('\n', afterDelimiter) + 1;
    if (contentStart === 0) break;
    const next = source.indexOf(`\n${delimiter}`, contentStart);
    if (next === -1) break;
    const contentEnd = source[next - 1] === '\r' ? next - 1 : next;
    parts.push(body.subarray(contentStart, contentEnd));
    start = next + 1;
  }
  return parts;
}

function decodeTransfer(body: Buffer, encoding: string): Buffer {
  switch (encoding.trim().toLowerCase()) {
    case 'base64':
      return Buffer.from(body.toString('latin1').replace(/[^A-Za-z0-9+/=]/g, ''), 'base64');
    case 'quoted-printable':
      return decodeQuotedPrintable(body.toString('latin1'));
    default:
      return body;
  }
}

function decodeQuotedPrintable(value: string): Buffer {
  const unfolded = value.replace(/[ \t]+(?=\r?\n)/g, '').replace(/=\r?\n/g, '');
  const bytes: number[] = [];
  for (let i = 0; i < unfolded.length; i++) {
    const char = unfolded[i];
    const hex = unfolded.slice(i + 1, i + 3);
    if (char === '=' && /^[0-9A-Fa-f]{2}$/.test(hex)) {
      bytes.push(Number.parseInt(hex, 16));
      i += 2;
    } else {
      bytes.push(unfolded.charCodeAt(i) & 0xff);
    }
  }
  return Buffer.from(bytes);
}

function decodeCharset(bytes: Buffer, charset: string): string {
  try {
    return new TextDecoder(charset.toLowerCase()).decode(bytes);
  } catch {
    return bytes.toString('utf8');
  }
}

function decodeWords(value: string): string {
  // Whitespace between adjacent encoded words is not part of the text (RFC 2047 §6.2).
  return value
    .replace(/(=\?[^?\s]+\?[BbQq]\?[^?\s]*\?=)\s+(?==\?[^?\s]+\?[BbQq]\?[^?\s]*\?=)/g, '$1')
    .replace(/=\?([^?\s]+)\?([BbQq])\?([^?\s]*)\?=/g, (_, charset: string, encoding: string, data: string) => {
      const bytes = encoding.toUpperCase() === 'B' ? Buffer.from(data, 'base64') : decodeQuotedPrintable(data.replace(/_/g, ' '));
      return decodeCharset(bytes, charset.split('*')[0] ?? 'utf-8');
    });
}
