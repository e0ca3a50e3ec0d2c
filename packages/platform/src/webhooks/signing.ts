import { createHmac, randomBytes } from 'node:crypto';
import { newId } from '@idt/core';

/** A new endpoint secret: `whsec_` and 32 random bytes in base64 (Standard Webhooks). */
export function generateWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/** A new message id, `msg_` and a time-ordered id without dashes: stable across every attempt. */
export function newMessageId(): string {
  return `msg_${newId().replaceAll('-', '')}`;
}

/** The `v1,<base64>` signature of one attempt with one secret: HMAC-SHA256 of `id.timestamp.body`. */
export function signWebhook(secret: string, messageId: string, timestamp: number, body: string): string {
  const key = Buffer.from(secret.startsWith('whsec_') ? secret.slice(6) : secret, 'base64');
  return `v1,${createHmac('sha256', key).update(`${messageId}.${timestamp}.${body}`).digest('base64')}`;
}

/** The `webhook-signature` header: one `v1,` entry per secret, space-separated (two during a rotation). */
export function signatureHeader(secrets: readonly string[], messageId: string, timestamp: number, body: string): string {
  return secrets.map((secret) => signWebhook(secret, messageId, timestamp, body)).join(' ');
}
