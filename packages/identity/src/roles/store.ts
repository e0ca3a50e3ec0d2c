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
 * Persistence of custom roles. Every write evicts every cached membership,
 * since memberships are cached with their organization's custom roles.
 */
export interface RolesStore {
  /** The organization's custom roles, by name. */
  list(organizationId: string): Promise<CustomRole[]>;
  /** A custom role of the organization. */
  find(organizationId: string, roleId: string): Promise<CustomRole | undefined>;
  /** Inserts the role; `name-taken` (nothing written) when the organization has one of that name. */
  create(role: CustomRole): Promise<'created' | 'name-taken'>;
  /**
   * In one transaction: applies the patch; a rename also renames the role in
   * the organization's memberships. `name-taken` (nothing written) when
   * another role has the new name; `undefined` when the role does not exist.
   */
  update(
    organizationId: string,
    roleId: string,
    patch: CustomRolePatch,
    at: string,
  ): Promise<CustomRole | 'name-taken' | undefined>;
  /**
   * In one transaction: deletes the role and takes it from every membership
   * of the organization holding it. `undefined` when it does not exist.
   */
  remove(organizationId: string, roleId: string): Promise<CustomRole | undefined>;
}
