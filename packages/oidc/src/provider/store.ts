import type { PendingEvent } from '@idt/core';

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

/** What ending sessions and token families writes, in one transaction. */
export interface EndedState {
  /** Provider sessions to delete. */
  readonly sessions: readonly ProviderSession[];
  /** Token families to end: every stored row of the grant, and its access tokens. */
  readonly grantIds: readonly string[];
  /** Events to publish with the change. */
  readonly events: readonly PendingEvent[];
}

/**
 * Persistence of the provider's sessions and token families beyond the
 * adapter: reads, and one atomic write per change. No policy: what to end,
 * and why, is decided by the callers.
 */
export interface ProviderStateStore {
  /** The provider sessions of an identity session, of a user, or of both. */
  findSessions(filter: { readonly sessionId?: string; readonly userId?: string }): Promise<ProviderSession[]>;
  /** The grants of a user, with one client only when `clientId` is given. */
  grantIdsOf(userId: string, clientId?: string): Promise<string[]>;
  /**
   * In one transaction: deletes the sessions, deletes every stored row of the
   * grants, refuses the grants' access tokens from `at` on (a `grant`
   * watermark, evicted from every instance's cache), and writes the events.
   */
  end(state: EndedState, at: Date): Promise<void>;
  /**
   * Refuses every access token of a grant from `at` on (oidc-provider
   * deletes the grant's stored rows itself).
   */
  refuseAccessTokens(grantId: string, at: Date): Promise<void>;
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
