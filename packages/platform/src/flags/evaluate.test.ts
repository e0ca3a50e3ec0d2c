import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { evaluateFlag, type FlagDefinition, type FlagOverride, flagBucket } from './evaluate.js';

const NOW = new Date('2026-06-01T12:00:00.000Z');

function flag(overrides: Partial<FlagDefinition> = {}): FlagDefinition {
  return {
    key: 'new-checkout',
    name: 'New checkout',
    description: '',
    type: 'boolean',
    defaultEnabled: false,
    rolloutPercentage: 0,
    variants: [],
    defaultVariant: null,
    ...overrides,
  };
}

function override(overrides: Partial<FlagOverride> = {}): FlagOverride {
  return {
    flagKey: 'new-checkout',
    organizationId: 'org',
    userId: null,
    enabled: true,
    variant: null,
    expiresAt: null,
    ...overrides,
  };
}

describe('flagBucket', () => {
  it('is the first four bytes of SHA-256(flagKey:userId), big-endian', () => {
    const expected = createHash('sha256').update('beta:user-1').digest().readUInt32BE(0);
    expect(flagBucket('beta', 'user-1')).toBe(expected);
    // A fixed vector: no process-specific seed can change it.
    expect(flagBucket('beta', 'user-1')).toBe(
      Number.parseInt(createHash('sha256').update('beta:user-1').digest('hex').slice(0, 8), 16),
    );
    expect(flagBucket('beta', 'user-1')).not.toBe(flagBucket('beta', 'user-2'));
    expect(flagBucket('beta', 'user-1')).not.toBe(flagBucket('gamma', 'user-1'));
  });
});

describe('evaluateFlag', () => {
  it('boolean: the default, else the first active override, the user’s before the organization’s', () => {
    expect(evaluateFlag(flag(), { userId: 'u' }, NOW)).toBe(false);
    expect(evaluateFlag(flag({ defaultEnabled: true }), { userId: null }, NOW)).toBe(true);
    expect(evaluateFlag(flag(), { userId: 'u', organizationOverride: override() }, NOW)).toBe(true);
    expect(
      evaluateFlag(
        flag(),
        { userId: 'u', organizationOverride: override(), userOverride: override({ userId: 'u', enabled: false }) },
        NOW,
      ),
    ).toBe(false);
  });

  it('ignores an override from the instant it expires', () => {
    const expiring = override({ expiresAt: '2026-06-01T12:00:00.001Z' });
    expect(evaluateFlag(flag(), { userId: 'u', organizationOverride: expiring }, NOW)).toBe(true);
    expect(evaluateFlag(flag(), { userId: 'u', organizationOverride: expiring }, new Date('2026-06-01T12:00:00.001Z'))).toBe(
      false,
    );
    // An expired user override lets the organization's apply.
    const expiredUser = override({ userId: 'u', enabled: false, expiresAt: '2026-01-01T00:00:00.000Z' });
    expect(evaluateFlag(flag(), { userId: 'u', userOverride: expiredUser, organizationOverride: override() }, NOW)).toBe(true);
  });

  it('percentage: enables users whose bucket modulo 100 is below the rollout; the default without a user', () => {
    const thirty = flag({ type: 'percentage', rolloutPercentage: 30 });
    for (const userId of ['a', 'b', 'c', 'd', 'e', 'f']) {
      expect(evaluateFlag(thirty, { userId }, NOW)).toBe(flagBucket('new-checkout', userId) % 100 < 30);
    }
    expect(evaluateFlag(flag({ type: 'percentage', rolloutPercentage: 0 }), { userId: 'a' }, NOW)).toBe(false);
    expect(evaluateFlag(flag({ type: 'percentage', rolloutPercentage: 100 }), { userId: 'a' }, NOW)).toBe(true);
    expect(evaluateFlag(thirty, { userId: null }, NOW)).toBe(false);
    expect(evaluateFlag({ ...thirty, defaultEnabled: true }, { userId: null }, NOW)).toBe(true);
    expect(evaluateFlag(flag({ type: 'percentage', rolloutPercentage: 0 }), { userId: 'a', userOverride: override() }, NOW)).toBe(
      true,
    );
  });

  it('percentage: 30 % of 10,000 users, ±2 %', () => {
    const thirty = flag({ key: 'rollout-30', type: 'percentage', rolloutPercentage: 30 });
    let enabled = 0;
    for (let i = 0; i < 10_000; i += 1) if (evaluateFlag(thirty, { userId: `user-${i}` }, NOW) === true) enabled += 1;
    expect(enabled).toBeGreaterThanOrEqual(2800);
    expect(enabled).toBeLessThanOrEqual(3200);
  });

  it('variant: walks the weights; overrides name a variant or disable the flag', () => {
    const abc = flag({
      key: 'layout',
      type: 'variant',
      defaultEnabled: true,
      variants: [
        { name: 'a', weight: 50 },
        { name: 'b', weight: 30 },
        { name: 'c', weight: 20 },
      ],
      defaultVariant: 'a',
    });
    const counts: Record<string, number> = { a: 0, b: 0, c: 0 };
    for (let i = 0; i < 10_000; i += 1) {
      const value = evaluateFlag(abc, { userId: `user-${i}` }, NOW) as string;
      counts[value] = (counts[value] ?? 0) + 1;
    }
    expect(counts.a).toBeGreaterThan(4800);
    expect(counts.a).toBeLessThan(5200);
    expect(counts.b).toBeGreaterThan(2800);
    expect(counts.c).toBeGreaterThan(1800);
    expect(evaluateFlag(abc, { userId: null }, NOW)).toBe('a');
    expect(
      evaluateFlag(abc, { userId: 'x', userOverride: override({ flagKey: 'layout', variant: 'c', enabled: null }) }, NOW),
    ).toBe('c');
    expect(evaluateFlag(abc, { userId: 'x', organizationOverride: override({ flagKey: 'layout', enabled: false }) }, NOW)).toBe(
      'a',
    );
    expect(evaluateFlag({ ...abc, defaultEnabled: false }, { userId: 'x' }, NOW)).toBe('a');
    // A variant the flag no longer has is ignored.
    expect(
      evaluateFlag(abc, { userId: 'x', userOverride: override({ flagKey: 'layout', variant: 'gone', enabled: null }) }, NOW),
    ).toBe(evaluateFlag(abc, { userId: 'x' }, NOW));
  });
});
