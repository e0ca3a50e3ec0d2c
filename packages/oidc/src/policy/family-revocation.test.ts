import { createManualClock } from '@idt/core';
import { describe, expect, it } from 'vitest';
import { createFamilyRevocation, FAMILY_CLAIM, familyWatermarksForgettableBefore } from './family-revocation.js';

describe('family revocation policy', () => {
  it('refuses the access tokens of an ended family at the injected time', async () => {
    const clock = createManualClock(1_700_000_000_000);
    const calls: Array<[string, number]> = [];
    const families = createFamilyRevocation({
      refuseAccessTokens: async (grantId, at) => void calls.push([grantId, at.getTime()]),
      clock,
    });
    clock.advance(5_000);
    await families.end('grant-1');
    expect(calls).toEqual([['grant-1', 1_700_000_005_000]]);
    expect(FAMILY_CLAIM).toBe('grant_id');
  });

  it('forgets a watermark once every access token it refuses has expired, skew included', () => {
    const now = new Date(1_700_000_000_000);
    expect(familyWatermarksForgettableBefore(now, 900).getTime()).toBe(now.getTime() - (900 + 300) * 1000);
  });
});
