import { type Clock, systemClock } from '@idt/core';
import type { FederatedConnection, HomeRealm } from '@idt/oidc';

/** The cache namespace of the sign-in realms: any key empties it. */
export const SIGN_IN_REALMS_NAMESPACE = 'sso.sign-in-realms';

/**
 * What a change of connections, domains or policies evicts in its
 * transaction: the whole snapshot (core's `ALL_KEYS`), on every instance,
 * once it commits.
 */
export const SIGN_IN_REALM_EVICTIONS = Object.freeze([{ namespace: SIGN_IN_REALMS_NAMESPACE, key: '*' }]);

/** How long a snapshot is trusted without an eviction: organization renames and status changes publish none here. */
export const REALM_SNAPSHOT_TTL_MS = 60_000;

/** An enabled connection as the sign-in pages route to it. */
export interface RealmConnection {
  readonly id: string;
  readonly name: string;
  /** `null` for a platform connection. */
  readonly organizationId: string | null;
  readonly organizationName: string | null;
  readonly ssoRequired: boolean;
}

/** Everything the sign-in pages ask, read in one go. */
export interface RealmRows {
  /** Enabled connections of the platform and of active organizations, oldest first. */
  readonly connections: readonly RealmConnection[];
  /** Verified domains of organizations that have an enabled connection. */
  readonly verifiedDomains: ReadonlyArray<{ readonly domain: string; readonly organizationId: string }>;
}

/** Reads the {@link RealmRows}. */
export interface RealmStore {
  load(): Promise<RealmRows>;
}

/** The realms, indexed for the sign-in pages. */
export interface RealmSnapshot {
  readonly identifierFirst: boolean;
  readonly platformConnections: readonly FederatedConnection[];
  /** Each organization's oldest enabled connection. */
  readonly byOrganization: ReadonlyMap<string, HomeRealm>;
  /** Verified domain → organization id. */
  readonly byDomain: ReadonlyMap<string, string>;
}

/** Options of {@link createRealmCache}. */
export interface RealmCacheOptions {
  readonly store: RealmStore;
  /** Subscribes to evictions of {@link SIGN_IN_REALMS_NAMESPACE} (the core invalidator's `subscribe`). */
  readonly subscribe: (namespace: string, listener: (key: string) => void) => () => void;
  /** Whether evictions from other instances arrive (the invalidator's `isLive`); a snapshot is not kept while they do not. */
  readonly isLive?: () => boolean;
  readonly clock?: Clock;
  readonly ttlMs?: number;
}

/** The sign-in realms, cached in memory. */
export interface RealmCache {
  snapshot(): Promise<RealmSnapshot>;
  /** Drops the snapshot of this instance. */
  clear(): void;
}

function indexRows(rows: RealmRows): RealmSnapshot {
  const byOrganization = new Map<string, HomeRealm>();
  const platformConnections: FederatedConnection[] = [];
  for (const connection of rows.connections) {
    if (connection.organizationId === null) {
      platformConnections.push({ id: connection.id, name: connection.name });
      continue;
    }
    // Oldest first: an organization with several enabled connections routes to its oldest.
    if (byOrganization.has(connection.organizationId)) continue;
    byOrganization.set(connection.organizationId, {
      connectionId: connection.id,
      organizationId: connection.organizationId,
      organizationName: connection.organizationName ?? '',
      ssoRequired: connection.ssoRequired,
    });
  }
  const byDomain = new Map<string, string>();
  for (const { domain, organizationId } of rows.verifiedDomains) {
    if (byOrganization.has(organizationId)) byDomain.set(domain, organizationId);
  }
  return { identifierFirst: byOrganization.size > 0, platformConnections, byOrganization, byDomain };
}

/**
 * The realms every sign-in page render asks about (identifier-first or not,
 * the platform's buttons, where an address or an organization hint goes),
 * kept as one in-memory snapshot: one load, then no database round trip
 * until a change of connections, domains or policies evicts it on every
 * instance (through the core invalidator), or {@link REALM_SNAPSHOT_TTL_MS}
 * passes. A load overtaken by an eviction is used once and not kept.
 *
 * @example
 * const realms = createRealmCache({ store, subscribe: invalidator.subscribe, isLive: invalidator.isLive });
 * const { byDomain } = await realms.snapshot();
 */
export function createRealmCache(options: RealmCacheOptions): RealmCache {
  const clock = options.clock ?? systemClock;
  const ttlMs = options.ttlMs ?? REALM_SNAPSHOT_TTL_MS;
  let cached: { readonly snapshot: RealmSnapshot; readonly expiresAt: number } | undefined;
  let loading: Promise<RealmSnapshot> | undefined;
  let generation = 0;
  const clear = () => {
    generation++;
    cached = undefined;
    loading = undefined;
  };
  options.subscribe(SIGN_IN_REALMS_NAMESPACE, clear);

  return {
    clear,
    snapshot() {
      const now = clock.now().getTime();
      if (cached && cached.expiresAt > now && (options.isLive?.() ?? true)) return Promise.resolve(cached.snapshot);
      if (loading) return loading;
      const started = generation;
      const attempt = options.store.load().then(
        (rows) => {
          const snapshot = indexRows(rows);
          if (generation === started) {
            cached = { snapshot, expiresAt: clock.now().getTime() + ttlMs };
            loading = undefined;
          }
          return snapshot;
        },
        (error: unknown) => {
          if (generation === started) loading = undefined;
          throw error;
        },
      );
      loading = attempt;
      return attempt;
    },
  };
}
