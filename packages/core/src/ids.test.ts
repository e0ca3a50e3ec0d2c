import { describe, expect, it } from 'vitest';
import { isUuid, newId } from './ids.js';

/** The 48-bit Unix time in milliseconds at the start of a UUIDv7. */
const timeOf = (id: string) => Number.parseInt(id.replace(/-/g, '').slice(0, 12), 16);

describe('newId', () => {
  it('makes RFC 9562 version 7 UUIDs that carry the time given', () => {
    const now = Date.parse('2026-11-27T12:00:00Z');
    const id = newId(now);
    expect(isUuid(id)).toBe(true);
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(timeOf(id)).toBe(now);
  });

  it('stays unique and in order within one millisecond, across many refills of its random bytes', () => {
    const now = Date.parse('2027-01-01T00:00:00Z');
    const ids = Array.from({ length: 3000 }, () => newId(now));
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    // The 12-bit counter starts below 2,048, so 3,000 ids wrap it at most once: the time moves on by one at most.
    expect(timeOf(ids.at(-1) as string) - now).toBeLessThanOrEqual(1);
  });

  it('never goes back when the clock does', () => {
    const later = newId(Date.parse('2027-02-01T00:00:00Z'));
    const earlier = newId(Date.parse('2027-01-15T00:00:00Z'));
    expect(earlier > later).toBe(true);
  });

  it('gives ids random bits that differ from one id to the next', () => {
    const now = Date.parse('2027-03-01T00:00:00Z');
    const tails = new Set(Array.from({ length: 500 }, () => newId(now).slice(-12)));
    expect(tails.size).toBe(500);
  });
});
