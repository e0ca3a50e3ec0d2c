import { describe, expect, it } from 'vitest';
import { ChangelogInput, ChangelogListQuery, SEMVER } from './schemas.js';

describe('SEMVER', () => {
  it.each([
    '0.0.0',
    '1.4.0',
    '10.20.30',
    '1.0.0-alpha',
    '1.0.0-alpha.1',
    '1.0.0-0.3.7',
    '1.0.0-x.7.z.92',
    '1.0.0+20130313144700',
    '1.0.0-beta+exp.sha.5114f85',
    '2.0.0-rc.1',
  ])('accepts %s', (version) => {
    expect(SEMVER.test(version)).toBe(true);
  });

  it.each([
    '1',
    '1.2',
    'v1.2.3',
    '01.2.3',
    '1.02.3',
    '1.2.03',
    '1.2.3-',
    '1.2.3-01',
    '1.2.3+',
    '1.2.3.4',
    ' 1.2.3x',
    '1.2.3-a..b',
    '',
  ])('refuses %j', (version) => {
    expect(SEMVER.test(version)).toBe(false);
  });
});

describe('ChangelogInput', () => {
  it('trims, defaults content and items, and normalizes releasedAt to UTC', () => {
    expect(ChangelogInput.parse({ version: ' 1.2.3 ', title: 'Spring', releasedAt: '2026-03-01T10:00:00+02:00' })).toEqual({
      version: '1.2.3',
      title: 'Spring',
      content: '',
      releasedAt: '2026-03-01T08:00:00.000Z',
      items: [],
    });
  });

  it('refuses unknown item types and an over-long version', () => {
    expect(ChangelogInput.safeParse({ version: '1.0.0', title: 't', items: [{ description: 'd', type: 'Chore' }] }).success).toBe(
      false,
    );
    expect(ChangelogInput.safeParse({ version: `1.0.0-${'a'.repeat(50)}`, title: 't' }).success).toBe(false);
  });

  it('takes limit 1..100, 50 by default', () => {
    expect(ChangelogListQuery.parse({})).toEqual({ limit: 50 });
    expect(ChangelogListQuery.parse({ limit: '100' })).toEqual({ limit: 100 });
    for (const limit of ['0', '101', 'x', '2.5']) expect(ChangelogListQuery.safeParse({ limit }).success).toBe(false);
  });
});
