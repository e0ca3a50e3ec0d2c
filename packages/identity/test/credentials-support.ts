import { join } from 'node:path';
import { type MailboxMessage, readMailbox } from '@idt/core/mail';
import type { TestHost } from '@idt/testing';
import { expect } from 'vitest';

/** The mailbox of a test server's development mailer. */
export function mailDirectory(server: TestHost): string {
  return join(server.database.dataDir, 'mail');
}

/** Every message to `to` carrying the `X-Idt-Template` header `template`, oldest first. */
export async function mailsTo(server: TestHost, to: string, template?: string): Promise<MailboxMessage[]> {
  const messages = await readMailbox(mailDirectory(server), { to });
  return template ? messages.filter((message) => message.headers['x-idt-template'] === template) : messages;
}

/**
 * Waits (polling, up to 5 s) until `to` has more than `already` messages of
 * `template`, and returns the newest. Mail is sent by event handlers or in
 * the background, so it lands shortly after the request that caused it.
 */
export async function waitForMail(server: TestHost, to: string, template: string, already = 0): Promise<MailboxMessage> {
  const deadline = Date.now() + 5000;
  for (;;) {
    await server.idt.infrastructure.events.dispatchPending();
    const messages = await mailsTo(server, to, template);
    if (messages.length > already) return messages.at(-1) as MailboxMessage;
    if (Date.now() > deadline) throw new Error(`No ${template} mail reached ${to}`);
    // Real I/O: the next look at the mailbox directory, which a background send writes to.
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The first URL of a message's text. */
export function linkIn(message: MailboxMessage): string {
  const link = /https?:\/\/\S+/.exec(message.text)?.[0];
  if (!link) throw new Error(`No link in "${message.subject}"`);
  return link;
}

/** Asserts an RFC 9457 problem with a code, and returns its body. */
export async function expectProblem(response: Response, status: number, code: string): Promise<Record<string, unknown>> {
  const body = (await response.json()) as Record<string, unknown>;
  expect({ status: response.status, code: body.code }).toEqual({ status, code });
  expect(response.headers.get('content-type')).toBe('application/problem+json');
  return body;
}

/** JSON request init. */
export function jsonInit(method: string, body: unknown, headers: Record<string, string> = {}): RequestInit {
  return { method, headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) };
}

/** Counts rows of a table matching `where`. */
export async function countRows(server: TestHost, table: string, where: Record<string, unknown> = {}): Promise<number> {
  const row = await server.database.db(table).where(where).count({ n: '*' }).first();
  return Number(row?.n ?? 0);
}
