import type { TransactionEffects, UnitOfWork } from '@idt/core';
import type { ScimCondition } from './filter.js';
import type { ScimGroupRecord } from './groups.js';
import type { ScimUserAttributes, ScimUserRecord } from './users.js';

/** A SCIM token as listed (never with its value or hash). */
export interface ScimTokenRecord {
  readonly id: string;
  readonly name: string;
  /** The first 16 characters, for display. */
  readonly prefix: string;
  readonly createdAt: string;
  readonly lastUsedAt: string | null;
}

/** The live token a SCIM request authenticated with: its organization, id and name (the request's audit actor). */
export interface ScimTokenIdentity {
  readonly organizationId: string;
  readonly tokenId: string;
  readonly name: string;
}

/** A SCIM token to store (its SHA-256 only). */
export interface NewScimToken {
  readonly id: string;
  readonly organizationId: string;
  readonly name: string;
  readonly prefix: string;
  readonly tokenHash: string;
  readonly createdByUserId: string | null;
  readonly at: string;
}

/** A slice of a list: `startIndex` is 1-based. */
export interface ScimPage {
  readonly startIndex: number;
  readonly count: number;
}

/** The membership of a user in the organization, as SCIM writes see it. */
export interface ScimMembership {
  readonly id: string;
  readonly status: 'active' | 'pending' | 'suspended' | 'denied';
  readonly roles: readonly string[];
}

/** The organization's SCIM link of a user. */
export interface ScimLink {
  readonly userId: string;
  readonly owned: boolean;
  readonly deleted: boolean;
}

/** A SCIM link to write (insert or replace). */
export interface ScimLinkWrite {
  readonly organizationId: string;
  readonly userId: string;
  readonly userName: string;
  readonly externalId: string | null;
  readonly givenName: string;
  readonly familyName: string;
  readonly attributes: ScimUserAttributes;
  readonly owned: boolean;
  readonly at: string;
}

/**
 * The primitives SCIM writes run in one transaction; the first is always
 * {@link ScimWrites.lockOrganization}, which serializes the organization's
 * membership changes with the membership service's.
 */
export interface ScimWrites {
  /** Locks the organization row. @returns its active owners' ids, or `undefined` when it does not exist. */
  lockOrganization(organizationId: string): Promise<{ readonly activeOwnerIds: readonly string[] } | undefined>;
  /** The link whose userName (lowercase) or externalId matches, deleted ones included. */
  findLink(
    organizationId: string,
    by: { readonly userNameKey?: string; readonly externalId?: string },
  ): Promise<ScimLink | undefined>;
  /** The link of a user (deleted ones included). */
  linkOf(organizationId: string, userId: string): Promise<ScimLink | undefined>;
  /** A user account by e-mail address (lowercase). */
  findAccountByEmail(email: string): Promise<{ readonly id: string } | undefined>;
  /** Inserts an active account without a password (username = e-mail). */
  insertAccount(account: { id: string; email: string; firstName: string; lastName: string; at: string }): Promise<void>;
  /** Updates an account's e-mail (and username) and names. */
  updateAccount(userId: string, account: { email: string; firstName: string; lastName: string; at: string }): Promise<void>;
  /** Memberships of the user in other organizations (any state). */
  countOtherMemberships(userId: string, organizationId: string): Promise<{ readonly any: number; readonly active: number }>;
  membershipOf(organizationId: string, userId: string): Promise<ScimMembership | undefined>;
  insertMembership(membership: {
    id: string;
    organizationId: string;
    userId: string;
    status: 'active' | 'suspended';
    roles: readonly string[];
    at: string;
  }): Promise<void>;
  /** Sets a membership's state and (when given) its complete role list. */
  updateMembership(
    membershipId: string,
    change: { status?: 'active' | 'suspended'; roles?: readonly string[]; at: string },
  ): Promise<void>;
  /** Inserts or replaces the link, clearing `deleted_at`. */
  writeLink(link: ScimLinkWrite): Promise<void>;
  /** Marks the link deleted (a DELETE). */
  deleteLink(organizationId: string, userId: string, at: string): Promise<void>;
  /** Revokes the user's live API keys of the organization. @returns their ids. */
  revokeApiKeys(userId: string, organizationId: string, at: string): Promise<string[]>;
  /** Ends every live sign-in session of the user (with their watermarks) and writes the user's token watermark. @returns the session ids. */
  endUserSessionsAndTokens(userId: string, at: string): Promise<string[]>;
  /** The ids among `userIds` that are SCIM Users of the organization (members, link not deleted). */
  existingUsers(organizationId: string, userIds: readonly string[]): Promise<string[]>;
  groupByName(organizationId: string, displayNameKey: string): Promise<{ readonly id: string } | undefined>;
  groupOf(organizationId: string, groupId: string): Promise<{ readonly id: string; readonly displayNameKey: string } | undefined>;
  insertGroup(group: {
    id: string;
    organizationId: string;
    displayName: string;
    externalId: string | null;
    at: string;
  }): Promise<void>;
  updateGroup(groupId: string, group: { displayName: string; externalId: string | null; at: string }): Promise<void>;
  deleteGroup(groupId: string): Promise<void>;
  groupMemberIds(groupId: string): Promise<string[]>;
  setGroupMembers(groupId: string, add: readonly string[], remove: readonly string[]): Promise<void>;
  /** The organization's role mappings: lowercase group name to roles. */
  roleMappings(organizationId: string): Promise<Map<string, string[]>>;
  /** The lowercase names of the organization's groups the user is in. */
  groupNamesOf(organizationId: string, userId: string): Promise<string[]>;
  /** Members of the organization in groups with the given lowercase names. */
  membersOfGroupsNamed(organizationId: string, displayNameKeys: readonly string[]): Promise<string[]>;
  /** Replaces the role mappings of the organization. */
  replaceRoleMappings(
    organizationId: string,
    mappings: ReadonlyArray<{ group: string; roles: readonly string[] }>,
    at: string,
  ): Promise<void>;
  /** The organization's custom role names. */
  customRoleNames(organizationId: string): Promise<Set<string>>;
  /** Inserts a token (in the transaction that records its creation). */
  insertToken(token: NewScimToken): Promise<void>;
  /**
   * Revokes a live token of the organization with one conditional update
   * (exactly one concurrent caller gets it).
   *
   * @returns the revoked token's name, or `undefined` when no live token of the organization has the id.
   */
  revokeToken(organizationId: string, tokenId: string, at: string): Promise<{ readonly name: string } | undefined>;
}

/** Persistence of SCIM: the reads of `/scim/v2` and the token API, and {@link ScimWrites} in a transaction. */
export interface ScimStore extends UnitOfWork<ScimWrites> {
  /** The organization, id and name of a live token, by the SHA-256 of its value; touches `last_used_at` at most once a minute. */
  resolveToken(tokenHash: string, now: string): Promise<ScimTokenIdentity | undefined>;
  listTokens(organizationId: string): Promise<ScimTokenRecord[]>;
  countTokens(organizationId: string): Promise<number>;
  /** Whether the user is an active owner or admin of an active platform organization. */
  isPlatformAdministrator(userId: string, organizationId: string): Promise<boolean>;
  organizationExists(organizationId: string): Promise<boolean>;
  listUsers(
    organizationId: string,
    filter: ScimCondition | undefined,
    page: ScimPage,
  ): Promise<{ total: number; records: ScimUserRecord[] }>;
  findUser(organizationId: string, userId: string): Promise<ScimUserRecord | undefined>;
  listGroups(
    organizationId: string,
    filter: ScimCondition | undefined,
    page: ScimPage,
    withMembers: boolean,
  ): Promise<{ total: number; records: ScimGroupRecord[] }>;
  findGroup(organizationId: string, groupId: string, withMembers: boolean): Promise<ScimGroupRecord | undefined>;
  /** The role mappings, for the config API. */
  listRoleMappings(organizationId: string): Promise<Array<{ group: string; roles: string[] }>>;
}

/** The transaction handle of {@link ScimStore}. */
export type ScimTransaction = ScimWrites & TransactionEffects;
