import { createTtlCache } from '@idt/core';
import { type CacheInvalidator, evictFrom } from '@idt/core/knex';
import { CacheNamespaces } from '@idt/identity';
import type { ClientStore, StoredClient } from './store.js';

/**
 * How long a client's metadata and instance are kept after its last request (they are evicted on
 * change anyway): a minute, so that the instances of clients that stopped calling do not stay in
 * memory (10,000 busy clients hold about 21 MiB of live heap in idt's composition), while a client
 * that keeps calling is never loaded again for it.
 */
export const CLIENT_CACHE_IDLE_MS = 60_000;
/**
 * The greatest age of a cached client (spread over its last fifth): it bounds an eviction that was
 * missed, and spreads the reloads of clients first seen together.
 */
export const CLIENT_CACHE_TTL_MS = 600_000;
/** The share of {@link CLIENT_CACHE_TTL_MS} over which cached clients' greatest ages are spread. */
export const CLIENT_CACHE_JITTER = 0.2;
/** How many clients' metadata and instances are kept: every client of a deployment of 10,000, with room. */
export const CLIENT_CACHE_MAX = 20_000;

/**
 * Client records for the sign-in, consent, logout and account pages and the
 * provider's hooks: one read per client, kept until the client changes (any
 * instance evicts). Answers a client's record, or `undefined` when it does
 * not exist.
 */
export function createStoredClientCache(
  store: Pick<ClientStore, 'find'>,
  invalidator: CacheInvalidator,
): (clientId: string) => Promise<StoredClient | undefined> {
  const storedClients = createTtlCache<StoredClient | null>({
    ttlMs: CLIENT_CACHE_TTL_MS,
    idleMs: CLIENT_CACHE_IDLE_MS,
    max: CLIENT_CACHE_MAX,
  });
  invalidator.subscribe(CacheNamespaces.clients, evictFrom(storedClients));
  return async (clientId) =>
    (await storedClients.getOrLoad(clientId, async () => (await store.find(clientId)) ?? null)) ?? undefined;
}
