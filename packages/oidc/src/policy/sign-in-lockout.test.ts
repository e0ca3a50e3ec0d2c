import { createManualClock } from '@idt/core';
import { describe, expect, it } from 'vitest';
import { testWindowCounter } from '../../test/support/window-counter.js';
import { createSignInLockout, isSignInLocked, SIGN_IN_LOCKOUT, signInLockoutKey } from './sign-in-lockout.js';

async function setup() {
  const clock = createManualClock('2030-01-01T00:00:00Z');
  const counter = await testWindowCounter(clock);
  const total = async (key: string) => (await counter.peek(key))?.total ?? 0;
  const lockout = createSignInLockout({ counter });
  const checks: string[] = [];
  const password = (email: string, given: string) =>
    lockout.attempt(email, async () => {
      checks.push(email);
      return given === 'right' ? `user:${email}` : undefined;
    });
  return { clock, lockout, password, checks, failures: (email: string) => total(signInLockoutKey(email)) };
}

describe('sign-in lockout policy', () => {
  it('keeps the numbers of the password lockout: 10 failures within 15 minutes', () => {
    expect(SIGN_IN_LOCKOUT).toEqual({ maxFailures: 10, windowMs: 900_000 });
    expect(isSignInLocked(9)).toBe(false);
    expect(isSignInLocked(10)).toBe(true);
    expect(isSignInLocked(2, 2)).toBe(true);
  });

  it('lets any number of correct passwords in a row sign in', async () => {
    const { password, failures } = await setup();
    for (let attempt = 0; attempt < 25; attempt++) {
      expect(await password('ada@example.com', 'right')).toEqual({ outcome: 'signed-in', account: 'user:ada@example.com' });
    }
    expect(await failures('ada@example.com')).toBe(0);
  });

  it('locks after ten wrong passwords, refuses without checking or counting, and lifts when the window ends', async () => {
    const { clock, password, checks, failures } = await setup();
    for (let attempt = 0; attempt < 10; attempt++) {
      expect(await password('ada@example.com', 'wrong')).toEqual({ outcome: 'wrong' });
      clock.advance(60_000);
    }
    expect(await failures('ada@example.com')).toBe(10);
    checks.length = 0;
    expect(await password('ada@example.com', 'right')).toEqual({ outcome: 'locked' });
    expect(await password('ada@example.com', 'wrong')).toEqual({ outcome: 'locked' });
    expect(checks).toEqual([]);
    expect(await failures('ada@example.com')).toBe(10);
    // Other addresses have their own count.
    expect((await password('grace@example.com', 'right')).outcome).toBe('signed-in');
    // The window started at the first failure: it ends 15 minutes after it.
    clock.advance(900_000 - 10 * 60_000 - 1);
    expect((await password('ada@example.com', 'right')).outcome).toBe('locked');
    clock.advance(1);
    expect((await password('ada@example.com', 'right')).outcome).toBe('signed-in');
  });

  it('resets the count on a correct password: 9 wrong, 1 right, 9 wrong does not lock', async () => {
    const { password, failures } = await setup();
    for (let attempt = 0; attempt < 9; attempt++) expect((await password('ada@example.com', 'wrong')).outcome).toBe('wrong');
    expect((await password('ada@example.com', 'right')).outcome).toBe('signed-in');
    expect(await failures('ada@example.com')).toBe(0);
    for (let attempt = 0; attempt < 9; attempt++) expect((await password('ada@example.com', 'wrong')).outcome).toBe('wrong');
    expect((await password('ada@example.com', 'right')).outcome).toBe('signed-in');
    for (let attempt = 0; attempt < 10; attempt++) expect((await password('ada@example.com', 'wrong')).outcome).toBe('wrong');
    expect((await password('ada@example.com', 'right')).outcome).toBe('locked');
  });

  it('treats an address without an account like any other: its failures count and lock it the same way', async () => {
    const clock = createManualClock('2030-01-01T00:00:00Z');
    const counter = await testWindowCounter(clock);
    const lockout = createSignInLockout({ counter });
    let checked = 0;
    const nobody = () =>
      lockout.attempt('nobody@example.com', async () => {
        checked += 1;
        return undefined;
      });
    for (let attempt = 0; attempt < 10; attempt++) expect((await nobody()).outcome).toBe('wrong');
    expect(await nobody()).toEqual({ outcome: 'locked' });
    expect(checked).toBe(10);
  });

  it('gives a burst of concurrent guesses no more checks than the limit', async () => {
    const clock = createManualClock('2030-01-01T00:00:00Z');
    const counter = await testWindowCounter(clock);
    const lockout = createSignInLockout({ counter });
    let checked = 0;
    const outcomes = await Promise.all(
      Array.from({ length: 30 }, () =>
        lockout.attempt('ada@example.com', async () => {
          checked += 1;
          return undefined;
        }),
      ),
    );
    expect(checked).toBe(10);
    expect(outcomes.filter((attempt) => attempt.outcome === 'locked')).toHaveLength(20);
  });

  it('takes its numbers from the options', async () => {
    const clock = createManualClock('2030-01-01T00:00:00Z');
    const counter = await testWindowCounter(clock);
    const lockout = createSignInLockout({ counter, maxFailures: 2, windowMs: 1_000 });
    const wrong = () => lockout.attempt('ada@example.com', async () => undefined);
    expect((await wrong()).outcome).toBe('wrong');
    expect((await wrong()).outcome).toBe('wrong');
    expect((await wrong()).outcome).toBe('locked');
    clock.advance(1_000);
    expect((await wrong()).outcome).toBe('wrong');
  });
});
