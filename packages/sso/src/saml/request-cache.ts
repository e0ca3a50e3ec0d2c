import type { Clock } from '@idt/core';

/** An AuthnRequest this service provider sent and has not yet seen answered. */
export interface PendingSamlRequest {
  /** Where the user goes after signing in (already reduced to a same-origin path). */
  readonly relayState?: string;
  /** When an answer stops being accepted. */
  readonly expiresAt: Date;
}

/**
 * Remembers the AuthnRequests this service provider made, so a response's
 * `InResponseTo` is accepted once, only for a request of ours, and only
 * before it expires.
 */
export interface RequestCache {
  /** Remembers a request under `key` until its `expiresAt`. */
  save(key: string, request: PendingSamlRequest): Promise<void>;
  /**
   * Removes and returns the request under `key` when it is there and not
   * expired; `undefined` otherwise. Exactly one concurrent caller gets it.
   */
  take(key: string): Promise<PendingSamlRequest | undefined>;
}

/**
 * A {@link RequestCache} in a `Map`, pruned of expired requests as it is used.
 *
 * @example
 * const requestCache = createMemoryRequestCache({ clock: systemClock });
 */
export function createMemoryRequestCache(options: { clock: Clock }): RequestCache {
  const entries = new Map<string, PendingSamlRequest>();
  const prune = (now: number) => {
    for (const [key, request] of entries) if (request.expiresAt.getTime() <= now) entries.delete(key);
  };
  return {
    async save(key, request) {
      prune(options.clock.now().getTime());
      entries.set(key, request);
    },
    async take(key) {
      prune(options.clock.now().getTime());
      const request = entries.get(key);
      entries.delete(key);
      return request;
    },
  };
}
