import { describe, expect, it } from 'vitest';
import type { MembershipState } from '../interactions/directory.js';
import { decideOrganization, grantStillApplies, type MembershipLookup, organizationHintError } from './organization.js';

const ORG_A = '00000000-0000-4000-8000-00000000000a';
const ORG_B = '00000000-0000-4000-8000-00000000000b';

/** Memberships of one user: organization id → state; `enroll` records what it was asked. */
function lookup(states: Record<string, MembershipState>, names: Record<string, string> = {}) {
  const enrolled: string[] = [];
  const memberships: MembershipLookup = {
    membershipState: async (_userId, organizationId) => states[organizationId] ?? 'not_a_member',
    enroll: async (_userId, organizationId) => {
      enrolled.push(organizationId);
      return states[organizationId] ?? 'not_a_member';
    },
    activeOrganizations: async () =>
      Object.entries(states)
        .filter(([, state]) => state === 'active')
        .map(([id]) => ({ id, name: names[id] ?? id })),
  };
  return { memberships, enrolled };
}

const bound = { organizationId: ORG_A, firstParty: false };
const firstParty = { organizationId: null, firstParty: true };
const platform = { organizationId: null, firstParty: false };

describe('organization hint (SPEC 5.2)', () => {
  it('lets a bound client name only its own organization', () => {
    expect(organizationHintError(bound, undefined)).toBeUndefined();
    expect(organizationHintError(bound, ORG_A.toUpperCase())).toBeUndefined();
    expect(organizationHintError(bound, ORG_B)).toMatch(/does not match/);
    expect(organizationHintError(bound, 'select')).toMatch(/does not match/);
  });

  it('lets only first-party clients pass it, as an id, select or none', () => {
    expect(organizationHintError(platform, ORG_A)).toMatch(/only first-party/);
    for (const value of [ORG_A, 'select', 'none', 'SELECT']) expect(organizationHintError(firstParty, value)).toBeUndefined();
    expect(organizationHintError(firstParty, 'acme')).toMatch(/organization id/);
  });
});

describe('organization of a new grant (SPEC 3.4, 5.2)', () => {
  it('runs a bound client’s enrollment and denies every state but active', async () => {
    for (const [state, description] of [
      ['pending', 'membership_pending'],
      ['suspended', 'membership_suspended'],
      ['denied', 'membership_denied'],
      ['not_a_member', 'not_a_member'],
    ] as const) {
      const { memberships, enrolled } = lookup({ [ORG_A]: state });
      expect(await decideOrganization(bound, 'u', undefined, memberships)).toEqual({ kind: 'deny', description });
      expect(enrolled).toEqual([ORG_A]);
    }
    const { memberships } = lookup({ [ORG_A]: 'active' });
    expect(await decideOrganization(bound, 'u', undefined, memberships)).toEqual({ kind: 'organization', organizationId: ORG_A });
  });

  it('follows a first-party hint, requiring an active membership', async () => {
    const { memberships } = lookup({ [ORG_A]: 'active', [ORG_B]: 'suspended' });
    expect(await decideOrganization(firstParty, 'u', ORG_A, memberships)).toEqual({
      kind: 'organization',
      organizationId: ORG_A,
    });
    expect(await decideOrganization(firstParty, 'u', ORG_B, memberships)).toEqual({
      kind: 'deny',
      description: 'membership_suspended',
    });
    expect(await decideOrganization(firstParty, 'u', 'none', memberships)).toEqual({
      kind: 'organization',
      organizationId: null,
    });
  });

  it('takes the single membership without a hint, none with several, and offers the choice on select', async () => {
    const single = lookup({ [ORG_A]: 'active' }).memberships;
    expect(await decideOrganization(firstParty, 'u', undefined, single)).toEqual({ kind: 'organization', organizationId: ORG_A });
    expect(await decideOrganization(firstParty, 'u', 'select', single)).toEqual({ kind: 'organization', organizationId: ORG_A });
    const several = lookup({ [ORG_A]: 'active', [ORG_B]: 'active' }, { [ORG_A]: 'A', [ORG_B]: 'B' }).memberships;
    expect(await decideOrganization(firstParty, 'u', undefined, several)).toEqual({ kind: 'organization', organizationId: null });
    expect(await decideOrganization(firstParty, 'u', 'select', several)).toEqual({
      kind: 'choose',
      organizations: [
        { id: ORG_A, name: 'A' },
        { id: ORG_B, name: 'B' },
      ],
    });
    expect(await decideOrganization(platform, 'u', undefined, several)).toEqual({ kind: 'organization', organizationId: null });
  });
});

describe('an existing grant for a new authorization', () => {
  it('applies while the membership stays active and the hint matches', async () => {
    const active = lookup({ [ORG_A]: 'active' }).memberships;
    const suspended = lookup({ [ORG_A]: 'suspended' }).memberships;
    expect(await grantStillApplies(bound, 'u', undefined, ORG_A, active)).toBe(true);
    expect(await grantStillApplies(bound, 'u', undefined, ORG_A, suspended)).toBe(false);
    expect(await grantStillApplies(firstParty, 'u', ORG_A, ORG_A, active)).toBe(true);
    expect(await grantStillApplies(firstParty, 'u', ORG_B, ORG_A, active)).toBe(false);
    expect(await grantStillApplies(firstParty, 'u', 'select', ORG_A, active)).toBe(false);
    expect(await grantStillApplies(firstParty, 'u', 'none', null, active)).toBe(true);
    expect(await grantStillApplies(platform, 'u', undefined, null, suspended)).toBe(true);
  });
});
