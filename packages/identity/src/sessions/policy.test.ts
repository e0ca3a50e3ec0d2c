import { describe, expect, it } from 'vitest';
import { sessionEvictions, sessionsToEvict } from './policy.js';

describe('the session cap', () => {
  it('ends the oldest sessions so that the new one makes at most maxActive', () => {
    expect(sessionsToEvict([], 5)).toEqual([]);
    expect(sessionsToEvict(['a', 'b', 'c', 'd'], 5)).toEqual([]);
    expect(sessionsToEvict(['a', 'b', 'c', 'd', 'e'], 5)).toEqual(['a']);
    expect(sessionsToEvict(['a', 'b', 'c', 'd', 'e', 'f', 'g'], 5)).toEqual(['a', 'b', 'c']);
    expect(sessionsToEvict(['a', 'b'], 1)).toEqual(['a', 'b']);
  });

  it('evicts the cached watermark and the cached session of an ended session', () => {
    expect(sessionEvictions('s1')).toEqual([
      { namespace: 'identity.revocations', key: 'session:s1' },
      { namespace: 'identity.sessions', key: 's1' },
    ]);
  });
});
