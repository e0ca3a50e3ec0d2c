import type { UnitOfWork } from '@idt/core';
import type { DomainRecord } from '../connections/records.js';

/** The domain primitives the service runs in one transaction. */
export interface DomainsWrites {
  /** `exists` (nothing written) when the organization already added this domain. */
  insert(domain: DomainRecord): Promise<'created' | 'exists'>;
  /**
   * Marks the domain verified, only while it is not: `verified`, `missing`
   * (no such unverified domain in the organization), or `taken` when
   * another organization holds it verified (a unique index decides, so of
   * two organizations verifying at once exactly one wins).
   */
  markVerified(organizationId: string, id: string, at: string): Promise<'verified' | 'missing' | 'taken'>;
  delete(organizationId: string, id: string): Promise<boolean>;
}

/** Persistence of the domains organizations claim. */
export interface DomainsStore extends UnitOfWork<DomainsWrites> {
  /** Oldest first. */
  list(organizationId: string): Promise<DomainRecord[]>;
  find(organizationId: string, id: string): Promise<DomainRecord | undefined>;
  /** The organization that verified `domain`, if any. */
  verifiedBy(domain: string): Promise<string | undefined>;
}
