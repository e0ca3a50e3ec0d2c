import { createManualClock } from '@idt/core';
import { describe, expect, it } from 'vitest';
import { createConnectionTokens } from './connection-tokens.js';

describe('connection tokens', () => {
  const clock = createManualClock('2026-03-01T09:00:00Z');
  const tokens = createConnectionTokens({ secret: 'a test secret', clock, ttlMs: 15_000 });

  it('are URL-safe, bound to the subject and valid for their lifetime only', () => {
    const issued = tokens.issue('user-1');
    expect(issued.token).toMatch(/^[A-Za-z0-9_.-]+$/);
    expect(tokens.verify(issued.token, 'user-1')).toEqual({ connectionId: issued.connectionId });
    expect(tokens.verify(issued.token, 'user-2')).toEqual({ error: 'forged' });
    clock.advance(14_999);
    expect(tokens.verify(issued.token, 'user-1')).toEqual({ connectionId: issued.connectionId });
    clock.advance(1);
    expect(tokens.verify(issued.token, 'user-1')).toEqual({ error: 'expired' });
  });

  it('refuse tampering, other secrets and malformed values', () => {
    const issued = tokens.issue('user-1');
    const [id, expiry, mac] = issued.token.split('.');
    expect(tokens.verify(`${id}.${(Number.parseInt(expiry as string, 36) + 60_000).toString(36)}.${mac}`, 'user-1')).toEqual({
      error: 'forged',
    });
    const other = createConnectionTokens({ secret: 'another secret', clock, ttlMs: 15_000 });
    expect(other.verify(issued.token, 'user-1')).toEqual({ error: 'forged' });
    for (const bad of ['', 'a.b.c', `${issued.token}.x`, `${id}..${mac}`, 'x'.repeat(200)]) {
      expect(tokens.verify(bad, 'user-1')).toHaveProperty('error');
    }
  });
});
