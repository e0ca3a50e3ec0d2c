import { type Clock, createLogger, createManualClock } from '@idt/core';
import type { WindowCounter } from '@idt/core/knex';
import { describe, expect, it } from 'vitest';
import { testWindowCounter } from '../../test/support/window-counter.js';
import {
  CLIENT_LOCKOUT,
  type ClientLockoutChange,
  type ClientLockoutRow,
  type ClientLockoutStore,
  clientFailuresKey,
  createClientLockout,
  lockHolds,
  UNKNOWN_CLIENT_LIMIT,
} from './client-lockout.js';

/** The real counter, with the keys it was asked to reset. */
async function recordingCounter(clock: Clock) {
  const real = await testWindowCounter(clock);
  const resets: string[] = [];
  const counter: Pick<WindowCounter, 'hit' | 'reset'> = {
    hit: (key, limit, windowMs) => real.hit(key, limit, windowMs),
    async reset(key) {
      resets.push(key);
      await real.reset(key);
    },
  };
  return { counter, resets };
}

/** A store shared by "instances" (policies over one store), spreading changes like the cache invalidator. */
function memoryStore(registered: string[]) {
  const rows = new Map<string, { total: number; lockedUntil?: Date; lastFailureAt?: Date }>();
  const listeners = new Set<(change: ClientLockoutChange) => void>();
  const emit = (change: ClientLockoutChange) => {
    for (const listener of listeners) listener(change);
  };
  const toRow = (clientId: string): ClientLockoutRow | undefined => {
    const row = rows.get(clientId);
    return row ? { clientId, lockedUntil: row.lockedUntil, lastFailureAt: row.lastFailureAt } : undefined;
  };
  const store: ClientLockoutStore = {
    async isRegistered(clientId) {
      return registered.includes(clientId);
    },
    async addFailure(clientId, at) {
      const row = rows.get(clientId) ?? { total: 0 };
      row.total += 1;
      row.lastFailureAt = at;
      rows.set(clientId, row);
      emit({ kind: 'failed', clientId });
    },
    async lock(clientId, until) {
      const row = rows.get(clientId) ?? { total: 0 };
      row.lockedUntil = until;
      rows.set(clientId, row);
      emit({ kind: 'locked', clientId });
    },
    async find(clientId) {
      return toRow(clientId);
    },
    async recent(now, failedSince) {
      return [...rows.keys()]
        .map((clientId) => toRow(clientId) as ClientLockoutRow)
        .filter(
          (row) =>
            (row.lockedUntil?.getTime() ?? 0) > now.getTime() || (row.lastFailureAt?.getTime() ?? 0) > failedSince.getTime(),
        );
    },
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
  return { store, rows, emit };
}

const details = { ip: '192.0.2.1', route: 'token', reason: 'invalid secret' };

async function setup(registered = ['acme-app', 'other-app']) {
  const clock = createManualClock('2030-01-01T00:00:00Z');
  const { counter, resets } = await recordingCounter(clock);
  const { store, rows, emit } = memoryStore(registered);
  const lines: Array<Record<string, unknown>> = [];
  const logger = createLogger({ level: 'warn', write: (line) => lines.push(JSON.parse(line)) });
  const lockout = createClientLockout({ store, counter, clock, logger });
  const fail = (clientId = 'acme-app') => lockout.recordFailure(clientId, details);
  return { clock, counter, resets, store, rows, emit, lines, lockout, fail, logger };
}

describe('client lockout policy', () => {
  it('keeps the numbers of SPEC 8.2: 5 failures within 5 minutes, a fixed 5-minute lock', () => {
    expect(CLIENT_LOCKOUT).toEqual({ maxFailures: 5, windowMs: 300_000, lockoutMs: 300_000 });
    expect(UNKNOWN_CLIENT_LIMIT).toBe(1_000);
    expect(lockHolds(undefined, 0)).toBe(false);
    expect(lockHolds(1_000, 999)).toBe(true);
    expect(lockHolds(1_000, 1_000)).toBe(false);
  });

  it('locks after five failures for exactly five minutes, and audits each answer', async () => {
    const { clock, lockout, fail, rows, lines } = await setup();
    for (let attempt = 0; attempt < 4; attempt++) await fail();
    expect(lockout.isLocked('acme-app')).toBe(false);
    await fail();
    expect(lockout.isLocked('acme-app')).toBe(true);
    expect(rows.get('acme-app')?.lockedUntil?.getTime()).toBe(clock.now().getTime() + 300_000);
    expect(lines.filter((line) => line.msg === 'audit: invalid_client')).toHaveLength(5);
    expect(lines.at(-1)).toMatchObject({ msg: 'audit: client locked out', clientId: 'acme-app' });
    // Failures while locked are audited and totalled, but do not renew the fixed lock.
    clock.advance(200_000);
    await fail();
    expect(lines.at(-1)).toMatchObject({ msg: 'audit: invalid_client', locked: true });
    expect(rows.get('acme-app')?.total).toBe(6);
    clock.advance(99_999);
    expect(lockout.isLocked('acme-app')).toBe(true);
    clock.advance(1);
    expect(lockout.isLocked('acme-app')).toBe(false);
    expect(lockout.isLocked('other-app')).toBe(false);
  });

  it('forgets the failures on a successful authentication: 4 failures, 1 success, 4 failures do not lock', async () => {
    const { lockout, fail, resets } = await setup();
    for (let attempt = 0; attempt < 4; attempt++) await fail();
    await lockout.recordSuccess('acme-app');
    expect(resets).toEqual([clientFailuresKey('acme-app')]);
    for (let attempt = 0; attempt < 4; attempt++) await fail();
    expect(lockout.isLocked('acme-app')).toBe(false);
    await fail();
    expect(lockout.isLocked('acme-app')).toBe(true);
  });

  it('costs nothing on a success when the client did not fail recently', async () => {
    const { clock, lockout, fail, resets } = await setup();
    expect(lockout.recordSuccess('acme-app')).toBeUndefined();
    await fail();
    await lockout.recordSuccess('acme-app');
    // Reset once: the next successes have nothing to forget.
    expect(lockout.recordSuccess('acme-app')).toBeUndefined();
    await fail();
    clock.advance(300_000);
    // The failure window ended: nothing to reset either.
    expect(lockout.recordSuccess('acme-app')).toBeUndefined();
    expect(resets).toEqual([clientFailuresKey('acme-app')]);
  });

  it('does not count failures of another window: four, then one more five minutes later, do not lock', async () => {
    const { clock, lockout, fail } = await setup();
    for (let attempt = 0; attempt < 4; attempt++) await fail();
    clock.advance(300_001);
    await fail();
    expect(lockout.isLocked('acme-app')).toBe(false);
  });

  it('spreads locks and recent failures to other instances over the store', async () => {
    const { clock, counter, store, fail, logger, resets } = await setup();
    const other = createClientLockout({ store, counter, clock, logger });
    await fail();
    // The failure happened on the first instance; a success on the other still resets the shared count.
    await other.recordSuccess('acme-app');
    expect(resets).toEqual([clientFailuresKey('acme-app')]);
    for (let attempt = 0; attempt < 5; attempt++) await fail();
    // The lock is read again by the other instance when it hears of it.
    await new Promise((resolve) => setImmediate(resolve));
    expect(other.isLocked('acme-app')).toBe(true);
  });

  it('loads the locks in force and the recent failures at start', async () => {
    const { clock, counter, store, fail, logger, resets } = await setup();
    for (let attempt = 0; attempt < 5; attempt++) await fail();
    await fail('other-app');
    const started = createClientLockout({ store, counter, clock, logger });
    expect(started.isLocked('acme-app')).toBe(false);
    await started.load();
    expect(started.isLocked('acme-app')).toBe(true);
    expect(started.isLocked('other-app')).toBe(false);
    await started.recordSuccess('other-app');
    expect(resets.at(-1)).toBe(clientFailuresKey('other-app'));
  });

  it('counts unknown client ids in bounded memory only, cut to 64 characters, and never locks them', async () => {
    const clock = createManualClock('2030-01-01T00:00:00Z');
    const { counter } = await recordingCounter(clock);
    const { store, rows } = memoryStore([]);
    const lines: Array<Record<string, unknown>> = [];
    const lockout = createClientLockout({
      store,
      counter,
      clock,
      unknownClientLimit: 2,
      logger: createLogger({ level: 'warn', write: (line) => lines.push(JSON.parse(line)) }),
    });
    const long = 'x'.repeat(500);
    for (let attempt = 0; attempt < 6; attempt++) await lockout.recordFailure(long, details);
    expect(lines.at(-1)).toMatchObject({ clientId: 'x'.repeat(64), unknownClient: true, failures: 6 });
    expect(lockout.isLocked(long)).toBe(false);
    await lockout.recordFailure('second', details);
    await lockout.recordFailure('third', details);
    expect(lockout.unknownClientsTracked()).toBe(2);
    await lockout.recordFailure(long, details);
    expect(lines.at(-1)).toMatchObject({ clientId: 'x'.repeat(64), failures: 1 });
    expect(rows.size).toBe(0);
    // Quiet for the failure window: forgotten.
    clock.advance(300_000);
    await lockout.recordFailure('second', details);
    expect(lines.at(-1)).toMatchObject({ clientId: 'second', failures: 1 });
  });

  it('reads everything again when changes may have been missed', async () => {
    const { clock, counter, store, rows, emit, logger } = await setup();
    const lockout = createClientLockout({ store, counter, clock, logger });
    rows.set('acme-app', { total: 5, lockedUntil: new Date(clock.now().getTime() + 60_000) });
    expect(lockout.isLocked('acme-app')).toBe(false);
    emit({ kind: 'unknown' });
    await new Promise((resolve) => setImmediate(resolve));
    expect(lockout.isLocked('acme-app')).toBe(true);
  });
});
