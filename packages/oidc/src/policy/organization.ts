import type { MembershipState } from '../interactions/directory.js';

/** What the organization decisions need to know of a client. */
export interface OrganizationClient {
  /** The organization a bound client belongs to; `null` for platform clients. */
  readonly organizationId: string | null;
  /** Defined by seeding (first-party): only these may pass the `organization` hint. */
  readonly firstParty: boolean;
}

/** The membership lookups the decisions make (the identity module answers them). */
export interface MembershipLookup {
  /** The membership state, without side effects. */
  membershipState(userId: string, organizationId: string): Promise<MembershipState>;
  /** Runs the organization's enrollment policy and returns the resulting state. */
  enroll(userId: string, organizationId: string): Promise<MembershipState>;
  /** The user's active memberships. */
  activeOrganizations(userId: string): Promise<ReadonlyArray<{ readonly id: string; readonly name: string }>>;
}

/**
 * The `organization` authorization parameter, normalized: an organization id,
 * `select` (show the choice), `none` (no organization), or absent.
 */
export type OrganizationHint = string | undefined;

const ORGANIZATION_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * Checks the `organization` authorization parameter (SPEC 5.2): a bound
 * client may only name its own organization; only first-party clients may
 * pass it otherwise, as an organization id, `select` or `none`.
 *
 * @returns the `invalid_request` description when the parameter is refused, else `undefined`
 */
export function organizationHintError(client: OrganizationClient, value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const normalized = value.toLowerCase();
  if (client.organizationId) {
    return normalized === client.organizationId ? undefined : "organization does not match the client's organization";
  }
  if (!client.firstParty) return 'only first-party clients may pass organization';
  if (normalized !== 'select' && normalized !== 'none' && !ORGANIZATION_ID.test(normalized)) {
    return 'organization must be an organization id';
  }
  return undefined;
}

/** The `error_description` of an `access_denied` for a membership that is not active (SPEC 5.2). */
export function membershipDenial(state: Exclude<MembershipState, 'active'>): string {
  return state === 'not_a_member' ? 'not_a_member' : `membership_${state}`;
}

/** What the organization of a new grant is. */
export type OrganizationDecision =
  /** The grant works in this organization (or in none). */
  | { readonly kind: 'organization'; readonly organizationId: string | null }
  /** The authorization ends with `access_denied` and this description. */
  | { readonly kind: 'deny'; readonly description: string }
  /** The user chooses among these organizations first. */
  | { readonly kind: 'choose'; readonly organizations: ReadonlyArray<{ readonly id: string; readonly name: string }> };

/**
 * Decides the organization of a new grant at authorize time (SPEC 3.4, 5.2):
 * - a bound client always runs its organization's enrollment policy; a user
 *   who is then pending, suspended, denied or not a member is denied (a
 *   pending request stays recorded, so a later approval lets the same
 *   sign-in succeed);
 * - a first-party client's hint names the organization (an active membership
 *   is required), `none` asks for none, and `select` shows the choice when
 *   the user has several;
 * - otherwise the token carries the user's single active membership, and no
 *   organization with several or none. Other clients get no organization.
 */
export async function decideOrganization(
  client: OrganizationClient,
  userId: string,
  hint: OrganizationHint,
  memberships: MembershipLookup,
): Promise<OrganizationDecision> {
  if (client.organizationId) {
    const state = await memberships.enroll(userId, client.organizationId);
    return state === 'active'
      ? { kind: 'organization', organizationId: client.organizationId }
      : { kind: 'deny', description: membershipDenial(state) };
  }
  if (!client.firstParty) return { kind: 'organization', organizationId: null };
  const normalized = hint?.toLowerCase();
  if (normalized && normalized !== 'select' && normalized !== 'none') return requireActive(userId, normalized, memberships);
  if (normalized === 'none') return { kind: 'organization', organizationId: null };
  const organizations = await memberships.activeOrganizations(userId);
  if (normalized === 'select' && organizations.length > 1) return { kind: 'choose', organizations };
  return { kind: 'organization', organizationId: organizations.length === 1 ? (organizations[0]?.id ?? null) : null };
}

/**
 * The membership gate: a grant may work in `organizationId` only while the
 * user's membership there is active; no organization needs no membership.
 */
export async function requireActive(
  userId: string,
  organizationId: string | null,
  memberships: Pick<MembershipLookup, 'membershipState'>,
): Promise<Exclude<OrganizationDecision, { kind: 'choose' }>> {
  if (organizationId === null) return { kind: 'organization', organizationId: null };
  const state = await memberships.membershipState(userId, organizationId);
  return state === 'active' ? { kind: 'organization', organizationId } : { kind: 'deny', description: membershipDenial(state) };
}

/**
 * Whether an existing grant still applies to a new authorization request, so
 * the user is not asked again: the organization requested by a first-party
 * client's hint must be the grant's (`select` always asks again), and the
 * membership in the grant's organization (the bound one for a bound client)
 * must still be active.
 */
export async function grantStillApplies(
  client: OrganizationClient,
  userId: string,
  hint: OrganizationHint,
  grantOrganizationId: string | null,
  memberships: Pick<MembershipLookup, 'membershipState'>,
): Promise<boolean> {
  const requested = hint?.toLowerCase();
  if (client.firstParty && requested) {
    if (requested === 'select') return false;
    if (requested !== 'none' && requested !== grantOrganizationId) return false;
  }
  const decision = await requireActive(userId, client.organizationId ?? grantOrganizationId, memberships);
  return decision.kind === 'organization';
}
