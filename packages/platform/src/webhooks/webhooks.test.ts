import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { nextRetryDelayMs, parseRetryAfter, WEBHOOK_RETRY_SCHEDULE_MS } from './schedule.js';
import { generateWebhookSecret, newMessageId, signatureHeader, signWebhook } from './signing.js';

describe('signing', () => {
  it('signs id.timestamp.body with HMAC-SHA256 of the base64-decoded secret', () => {
    const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    const body = '{"type":"webhook.test"}';
    const expected = createHmac('sha256', Buffer.from('MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw', 'base64'))
      .update(`msg_1.1700000000.${body}`)
      .digest('base64');
    expect(signWebhook(secret, 'msg_1', 1_700_000_000, body)).toBe(`v1,${expected}`);
    expect(signatureHeader([secret, generateWebhookSecret()], 'msg_1', 1_700_000_000, body).split(' ')).toHaveLength(2);
  });

  it('makes 32-byte whsec_ secrets and msg_ ids without dots', () => {
    const secret = generateWebhookSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(secret.slice(6), 'base64')).toHaveLength(32);
    expect(newMessageId()).toMatch(/^msg_[0-9a-f]{32}$/);
  });
});

describe('the retry schedule', () => {
  it('waits 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h (±10 %), then gives up', () => {
    const low = () => 0;
    const high = () => 1;
    WEBHOOK_RETRY_SCHEDULE_MS.forEach((step, index) => {
      expect(nextRetryDelayMs(index + 1, null, low)).toBe(Math.round(step * 0.9));
      expect(nextRetryDelayMs(index + 1, null, high)).toBe(Math.round(step * 1.1));
    });
    expect(WEBHOOK_RETRY_SCHEDULE_MS).toHaveLength(7);
    expect(nextRetryDelayMs(8, null, low)).toBeNull();
  });

  it('honours a longer Retry-After up to the next step', () => {
    const half = () => 0.5;
    expect(nextRetryDelayMs(1, 1000, half)).toBe(5000);
    expect(nextRetryDelayMs(1, 60_000, half)).toBe(60_000);
    expect(nextRetryDelayMs(1, 3_600_000, half)).toBe(5 * 60_000);
    expect(parseRetryAfter('120', new Date())).toBe(120_000);
    const now = new Date('2026-01-01T00:00:00Z');
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:01:00 GMT', now)).toBe(60_000);
    expect(parseRetryAfter('soon', now)).toBeNull();
    expect(parseRetryAfter(undefined, now)).toBeNull();
  });
});
