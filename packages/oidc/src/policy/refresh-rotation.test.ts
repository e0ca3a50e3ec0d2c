import { createManualClock } from '@idt/core';
import { describe, expect, it } from 'vitest';
import { classifyRedemption, createSuccessorDerivation } from './refresh-rotation.js';

describe('refresh rotation policy', () => {
  it('tolerates a replay up to the last millisecond of the leeway, then calls it a replay', () => {
    const clock = createManualClock(1_700_000_000_000);
    const consumedAt = clock.now().getTime();
    expect(classifyRedemption(undefined, clock.now().getTime(), 30_000)).toBe('first');
    expect(classifyRedemption(consumedAt, clock.now().getTime(), 30_000)).toBe('tolerated-replay');
    clock.advance(30_000);
    expect(classifyRedemption(consumedAt, clock.now().getTime(), 30_000)).toBe('tolerated-replay');
    clock.advance(1);
    expect(classifyRedemption(consumedAt, clock.now().getTime(), 30_000)).toBe('replay');
    // A leeway of 0 tolerates only the same instant.
    expect(classifyRedemption(consumedAt, consumedAt, 0)).toBe('tolerated-replay');
    expect(classifyRedemption(consumedAt, consumedAt + 1, 0)).toBe('replay');
  });

  it('derives one successor per token, unguessable without the secret', () => {
    const successorOf = createSuccessorDerivation('a server secret of enough length');
    const first = successorOf('token-a');
    expect(successorOf('token-a')).toBe(first);
    expect(first).toMatch(/^[\w-]{43}$/);
    expect(successorOf('token-b')).not.toBe(first);
    expect(successorOf(first)).not.toBe(first);
    expect(createSuccessorDerivation('another server secret entirely')('token-a')).not.toBe(first);
  });
});
