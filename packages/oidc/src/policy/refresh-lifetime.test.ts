import { createManualClock } from '@idt/core';
import { describe, expect, it } from 'vitest';
import { refreshTokenLifetime, remainingRefreshLifetime } from './refresh-lifetime.js';

describe('refresh lifetime policy (SPEC 5.3)', () => {
  const application = { refreshTokenLifetime: null, firstParty: false, kind: 'application' as const };

  it('takes the client value, else the kind default, else the global fallback', () => {
    expect(refreshTokenLifetime({ ...application, refreshTokenLifetime: 600 }, 1234)).toBe(600);
    expect(refreshTokenLifetime({ ...application, firstParty: true, refreshTokenLifetime: 600 }, 1234)).toBe(600);
    expect(refreshTokenLifetime({ ...application, firstParty: true }, 1234)).toBe(604_800);
    expect(refreshTokenLifetime(application, 1234)).toBe(86_400);
    expect(refreshTokenLifetime({ ...application, kind: 'service-account' }, 1234)).toBe(1234);
    expect(refreshTokenLifetime(undefined, 1234)).toBe(1234);
  });

  it('keeps the chain absolute: no sliding, at least one second', () => {
    const clock = createManualClock(1_700_000_000_000);
    const start = Math.floor(clock.now().getTime() / 1000);
    expect(remainingRefreshLifetime(start, 600, start)).toBe(600);
    clock.advance(300_000);
    expect(remainingRefreshLifetime(start, 600, Math.floor(clock.now().getTime() / 1000))).toBe(300);
    clock.advance(400_000);
    expect(remainingRefreshLifetime(start, 600, Math.floor(clock.now().getTime() / 1000))).toBe(1);
  });
});
