import { createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Clock } from '@idt/core';

/** A connection token handed out by negotiate. */
export interface IssuedConnection {
  /** Public: shown in logs and to the client as `connectionId`. */
  readonly connectionId: string;
  /** Secret: the client connects with `?id=<token>`. URL-safe. */
  readonly token: string;
  /** Epoch milliseconds after which the token is refused. */
  readonly expiresAt: number;
}

/** Why a connection token was refused. */
export type ConnectionTokenError = 'malformed' | 'expired' | 'forged';

/**
 * Signed, short-lived connection tokens bound to the caller's subject:
 * `<connectionId>.<expiry>.<HMAC-SHA256>`. Any instance sharing the server
 * secret accepts them (no sticky sessions); single use is enforced by the
 * hub with a shared counter.
 */
export interface ConnectionTokens {
  issue(subject: string): IssuedConnection;
  /** The connection id of a genuine, unexpired token issued to `subject`. */
  verify(token: string, subject: string): { connectionId: string } | { error: ConnectionTokenError };
}

const CONNECTION_ID = /^[A-Za-z0-9_-]{22}$/;

/**
 * Creates the token codec; the key is derived from the server secret.
 *
 * @example
 * const tokens = createConnectionTokens({ secret, clock, ttlMs: 15_000 });
 * const { token } = tokens.issue(principal.subject);
 */
export function createConnectionTokens(options: { secret: string; clock: Clock; ttlMs: number }): ConnectionTokens {
  const key = Buffer.from(
    hkdfSync('sha256', Buffer.from(options.secret, 'utf8'), Buffer.from('idt-realtime-connections'), Buffer.from('v1'), 32),
  );
  const mac = (connectionId: string, expiry: string, subject: string) =>
    createHmac('sha256', key).update(`${connectionId}.${expiry}.${subject}`).digest();
  return {
    issue(subject) {
      const connectionId = randomBytes(16).toString('base64url');
      const expiresAt = options.clock.now().getTime() + options.ttlMs;
      const expiry = expiresAt.toString(36);
      return {
        connectionId,
        expiresAt,
        token: `${connectionId}.${expiry}.${mac(connectionId, expiry, subject).toString('base64url')}`,
      };
    },
    verify(token, subject) {
      const [connectionId, expiry, signature, extra] = token.split('.');
      if (
        extra !== undefined ||
        !connectionId ||
        !CONNECTION_ID.test(connectionId) ||
        !expiry ||
        !/^[0-9a-z]{1,12}$/.test(expiry)
      ) {
        return { error: 'malformed' };
      }
      const given = Buffer.from(signature ?? '', 'base64url');
      const expected = mac(connectionId, expiry, subject);
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) return { error: 'forged' };
      if (Number.parseInt(expiry, 36) <= options.clock.now().getTime()) return { error: 'expired' };
      return { connectionId };
    },
  };
}
