import type { UnitOfWork } from '@idt/core';

/** A single sign-on session of the provider, as ending it needs it. */
export interface ProviderSession {
  /** The row id of the provider session. */
  readonly id: string;
  readonly userId: string | null;
  /** The identity session id (the `sid` of its tokens). */
  readonly sessionId: string | null;
  /** The clients that took part, and their grants. */
  readonly clientIds: readonly string[];
  readonly grantIds: readonly string[];
}

/**
 * The provider-state primitives a caller runs in one transaction (see
 * {@link ProviderStateStore.transaction}). None of them publishes events or
 * evicts caches: the caller that decided the change does, through the
 * transaction's effects.
 */
export interface ProviderStateWrites {
  /** Deletes provider sessions by their row ids; answers how many were deleted. An empty list writes nothing. */
  deleteSessions(ids: readonly string[]): Promise<number>;
  /**
   * Deletes every stored row of the grants (the grant, its codes and refresh
   * tokens); answers how many were deleted. An empty list writes nothing.
   */
  deleteGrantRows(grantIds: readonly string[]): Promise<number>;
  /**
   * Refuses every access token of each grant from `at` on: a `grant`
   * revocation watermark each (the caller evicts `grant:<id>` from the
   * revocations cache). An empty list writes nothing.
   */
  refuseGrants(grantIds: readonly string[], at: Date): Promise<void>;
}

/**
 * Persistence of the provider's sessions and token families beyond the
 * adapter: reads, and named primitives run in one transaction. No policy:
 * what to end, and why, is decided by the callers, which also publish the
 * events and evict the caches of what they end in that transaction.
 */
export interface ProviderStateStore extends UnitOfWork<ProviderStateWrites> {
  /** The provider sessions of an identity session, of a user, or of both. */
  findSessions(filter: { readonly sessionId?: string; readonly userId?: string }): Promise<ProviderSession[]>;
  /** The grants of a user, with one client only when `clientId` is given. */
  grantIdsOf(userId: string, clientId?: string): Promise<string[]>;
  /** Forgets family watermarks written before `before`; returns how many. */
  pruneFamilies(before: Date): Promise<number>;
  /** Deletes grant contexts expired by `now`; returns how many. */
  pruneGrantContexts(now: Date): Promise<number>;
}

/** The payload oidc-provider stores for a model instance. */
export type AdapterPayload = Record<string, unknown> & {
  grantId?: string;
  uid?: string;
  userCode?: string;
  accountId?: string;
  clientId?: string;
  sid?: string;
  consumed?: unknown;
  authorizations?: Record<string, { sid?: string; grantId?: string }>;
};

/** The adapter interface of oidc-provider. */
export interface OidcAdapter {
  upsert(id: string, payload: AdapterPayload, expiresIn?: number): Promise<void>;
  find(id: string): Promise<AdapterPayload | undefined>;
  findByUserCode(userCode: string): Promise<AdapterPayload | undefined>;
  findByUid(uid: string): Promise<AdapterPayload | undefined>;
  consume(id: string): Promise<void>;
  destroy(id: string): Promise<void>;
  revokeByGrantId(grantId: string): Promise<void>;
}

/** oidc-provider's storage adapter class, as idt's provider uses it. */
export interface ProviderAdapterClass {
  new (name: string): OidcAdapter;
  /**
   * Writes what the adapter left pending for a request (a consumption it
   * defers to the request's next write); call it before the answer leaves.
   */
  settle(request: object): Promise<void>;
}
