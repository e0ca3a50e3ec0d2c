import type { OrganizationRecord, UserRecord } from '../accounts/records.js';

/** Reads the deployment's operator needs and no request actor can make: lookups across organizations. */
export interface OperatorStore {
  /**
   * An organization by id, slug or name (names compared case-insensitively);
   * the oldest match when several organizations share the name.
   */
  findOrganization(reference: string): Promise<OrganizationRecord | undefined>;
  /** A user by (normalized, lowercase) e-mail address. */
  findUserByEmail(email: string): Promise<UserRecord | undefined>;
  /** The oldest active owner (an active user) of the active platform organization. */
  platformOwner(): Promise<string | undefined>;
}
