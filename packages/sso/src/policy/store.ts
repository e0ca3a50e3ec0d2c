import type { UnitOfWork } from '@idt/core';

/** An organization's single sign-on policy as stored. */
export interface SsoPolicyRecord {
  readonly organizationId: string;
  readonly ssoRequired: boolean;
  /** `null` while the organization never set it. */
  readonly updatedAt: string | null;
}

/** The policy primitives the service runs in one transaction. */
export interface SsoPolicyWrites {
  /** Writes the policy (insert or replace); answers whether `ssoRequired` changed. */
  put(organizationId: string, ssoRequired: boolean, updatedBy: string | null, at: string): Promise<boolean>;
}

/** Persistence of the organizations' single sign-on policies. */
export interface SsoPolicyStore extends UnitOfWork<SsoPolicyWrites> {
  /** The policy; `ssoRequired: false` when the organization never set one. */
  get(organizationId: string): Promise<SsoPolicyRecord>;
}
