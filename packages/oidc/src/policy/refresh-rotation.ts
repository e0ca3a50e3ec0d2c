import { createHmac, hkdfSync } from 'node:crypto';

/**
 * How one redemption of a refresh token is treated (SPEC 3.6):
 * - `first`: the token was never redeemed; it rotates.
 * - `tolerated-replay`: it was redeemed at most `leewayMs` ago; it rotates
 *   again to the same successor (see {@link createSuccessorDerivation}), so the
 *   family keeps exactly one live refresh token.
 * - `replay`: it was redeemed longer ago; the whole family ends.
 */
export type RedemptionKind = 'first' | 'tolerated-replay' | 'replay';

/**
 * Classifies a redemption of a refresh token from when it was first redeemed.
 * The leeway's last millisecond still tolerates the replay.
 *
 * @param consumedAtMs when the token was first redeemed (epoch milliseconds), `undefined` if never
 * @param nowMs the injected clock's time
 * @param leewayMs the reuse leeway (30 seconds by default)
 */
export function classifyRedemption(consumedAtMs: number | undefined, nowMs: number, leewayMs: number): RedemptionKind {
  if (consumedAtMs === undefined) return 'first';
  return nowMs - consumedAtMs <= leewayMs ? 'tolerated-replay' : 'replay';
}

/** Bytes of a successor refresh token: 256 bits, the size of oidc-provider's own random ones. */
const SUCCESSOR_BYTES = 32;

/**
 * Derives the successor of a refresh token from its value with an HMAC keyed
 * by the server secret. Every redemption of one token, concurrent or replayed
 * within the leeway, therefore rotates to the same successor value: a family
 * never forks, and a thief replaying inside the leeway holds the legitimate
 * client's own next token instead of a private branch. The successor is as
 * unguessable as its predecessor: without the server secret it cannot be
 * computed, and the server stores only its SHA-256.
 *
 * @example
 * const successorOf = createSuccessorDerivation(serverSecret);
 * successorOf(oldRefreshToken) === successorOf(oldRefreshToken); // true
 */
export function createSuccessorDerivation(secret: string): (predecessor: string) => string {
  const key = Buffer.from(
    hkdfSync('sha256', Buffer.from(secret), Buffer.from('idt-refresh-successor'), Buffer.from('v1'), SUCCESSOR_BYTES),
  );
  return (predecessor) =>
    createHmac('sha256', key).update(predecessor).digest().subarray(0, SUCCESSOR_BYTES).toString('base64url');
}
