import type { RateLimitDecision } from '../auth/principal.js';
import type { RatePolicyName } from '../config/config.js';

/** Counts requests against fixed windows (see `createRateLimiter`). */
export interface RequestRateLimiter {
  /** The decision; a limiter may answer synchronously when it needs no I/O. */
  hit(policy: RatePolicyName, partitionKey: string): Promise<RateLimitDecision> | RateLimitDecision;
}

/**
 * What identifies the caller of a request, as far as the surface counting it
 * knows: the API pipeline passes the authenticated `Principal` (which is one);
 * the OpenID provider's edge the organization of the client a request names.
 */
export interface RateCaller {
  /** The organization the request works in, or the organization of the client it names. */
  readonly organizationId?: string | null;
  /** The user behind the call. */
  readonly userId?: string | null;
  /** An authenticated caller's subject: a service account's client id, counted when neither of the above is known. */
  readonly subject?: string;
}

/**
 * The rate-limit partition of a request (SPEC 8.1), the one rule of every
 * surface: the organization, else the user, else an authenticated caller's
 * subject (`client:`), else the caller's IP address (`unknown` when it is).
 * The Registration policy skips the organization. The API counts the
 * principal of a request; the provider's endpoints the organization of the
 * client a request names, whatever the client authentication method; the
 * sign-in pages, and requests that name no client or an unknown one, count
 * under the IP.
 *
 * @example
 * ratePartition('global', principal, '192.0.2.1');                // 'org:org-1'
 * ratePartition('registration', principal, '192.0.2.1');          // 'user:user-1'
 * ratePartition('auth', { organizationId: null }, '192.0.2.1');   // 'ip:192.0.2.1'
 * ratePartition('auth', null, undefined);                         // 'ip:unknown'
 */
export function ratePartition(policy: RatePolicyName, caller: RateCaller | null, ip: string | undefined): string {
  if (caller) {
    if (policy !== 'registration' && caller.organizationId) return `org:${caller.organizationId}`;
    if (caller.userId) return `user:${caller.userId}`;
    if (caller.subject !== undefined) return `client:${caller.subject}`;
  }
  return `ip:${ip ?? 'unknown'}`;
}
