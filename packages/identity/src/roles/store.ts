import type { UnitOfWork } from '@idt/core';

/** A custom role of an organization. */
export interface CustomRole {
  readonly id: string;
  readonly organizationId: string;
  /** Normalized (lowercase). */
  readonly name: string;
  readonly description: string;
  readonly permissions: readonly string[];
  /** ISO 8601 UTC. */
  readonly createdAt: string;
  readonly updatedAt: string;
}

/** Changes to a custom role. */
export interface CustomRolePatch {
  readonly name?: string;
  readonly description?: string;
  readonly permissions?: readonly string[];
}

/**
 * The custom role primitives a service runs in one transaction (see
 * {@link RolesStore.transaction}); none evicts caches (memberships are cached
 * with their organization's custom roles: the service evicts them all).
 */
export interface RolesWrites {
  /**
   * Inserts the role.
   *
   * @returns `false` when the organization has a role of that name (a unique
   *   violation, which on PostgreSQL aborts the transaction: throw to roll it back).
   */
  insert(role: CustomRole): Promise<boolean>;
  /**
   * Applies the patch; a rename also renames the role in the organization's
   * memberships. Its first statement writes the role row (its lock; on SQLite
   * the write lock before anything is read).
   *
   * @returns the role after the change; `undefined` when it does not exist;
   *   `name-taken` when another role has the new name (roll back, as for {@link RolesWrites.insert}).
   */
  update(
    organizationId: string,
    roleId: string,
    patch: CustomRolePatch,
    at: string,
  ): Promise<CustomRole | 'name-taken' | undefined>;
  /**
   * Deletes the role and takes it from every membership of the organization
   * holding it, after locking its row.
   *
   * @returns the deleted role; `undefined` when it does not exist.
   */
  remove(organizationId: string, roleId: string): Promise<CustomRole | undefined>;
}

/**
 * Persistence of custom roles: reads outside a transaction, the
 * {@link RolesWrites} primitives inside one the service opens.
 */
export interface RolesStore extends UnitOfWork<RolesWrites> {
  /** The organization's custom roles, by name. */
  list(organizationId: string): Promise<CustomRole[]>;
  /** A custom role of the organization. */
  find(organizationId: string, roleId: string): Promise<CustomRole | undefined>;
}
