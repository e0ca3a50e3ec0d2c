import { createHmac, randomBytes } from 'node:crypto';
import { type Clock, constantTimeEqual, systemClock } from '@idt/core';
import type { CookieKeyring } from '../config.js';

/** What a login state says about its sign-in, readable without the transaction cookie. */
export interface LoginStateFacts {
  /** The origin `/bff/login` was answered on, as the BFF saw it (`http://127.0.0.1:3000`). */
  readonly loginOrigin: string;
  /** When the sign-in started (milliseconds since the epoch, by the BFF's clock). */
  readonly issuedAt: number;
}

/**
 * The `state` of a sign-in: `<random>.<facts>.<mac>`. The random part (22
 * base64url characters, 128 bits) is what makes it unguessable and names the
 * transaction cookie; the facts (where and when the sign-in started) are
 * base64url JSON under an HMAC-SHA256 keyed from the cookie key ring. The
 * callback reads them when the transaction cookie is missing, to tell a
 * sign-in that came back to another host from one that expired.
 */
export interface LoginStates {
  /** A new state for a sign-in started on `loginOrigin` now. */
  create(loginOrigin: string): string;
  /** The facts of a state this BFF issued (under any key of the ring), or `undefined`. */
  read(state: string): LoginStateFacts | undefined;
}

/** The label the state's MAC key is derived under, so the cookie secret is never used as is. */
const KEY_LABEL = 'idt-bff login state v1';
const PART = /^[A-Za-z0-9_-]+$/;
/** The longest state read: origins are short; anything longer is not one of ours. */
const MAX_STATE_LENGTH = 1024;

/**
 * The login states of a key ring: states are issued under its current key
 * and read under any of its keys.
 *
 * @example
 * const states = createLoginStates(config.cookie.keyring, clock);
 * const state = states.create('https://app.example.com');
 * states.read(state); // { loginOrigin: 'https://app.example.com', issuedAt: ... }
 */
export function createLoginStates(keyring: CookieKeyring, clock: Clock = systemClock): LoginStates {
  const keys = new Map<string, Buffer>();
  for (const [id, secret] of keyring.secrets) keys.set(id, createHmac('sha256', secret).update(KEY_LABEL).digest());
  const mac = (key: Buffer, text: string) => createHmac('sha256', key).update(text).digest('base64url');
  return {
    create(loginOrigin) {
      const key = keys.get(keyring.currentKeyId) as Buffer;
      const facts = Buffer.from(
        JSON.stringify({ k: keyring.currentKeyId, o: loginOrigin, t: clock.now().getTime() }),
        'utf8',
      ).toString('base64url');
      const signed = `${randomBytes(16).toString('base64url')}.${facts}`;
      return `${signed}.${mac(key, signed)}`;
    },
    read(state) {
      if (state.length > MAX_STATE_LENGTH) return undefined;
      const parts = state.split('.');
      if (parts.length !== 3 || !parts.every((part) => PART.test(part))) return undefined;
      const [random, facts, given] = parts as [string, string, string];
      let parsed: { k?: unknown; o?: unknown; t?: unknown };
      try {
        parsed = JSON.parse(Buffer.from(facts, 'base64url').toString('utf8')) as typeof parsed;
      } catch {
        return undefined;
      }
      const key = typeof parsed?.k === 'string' ? keys.get(parsed.k) : undefined;
      if (!key || !constantTimeEqual(mac(key, `${random}.${facts}`), given)) return undefined;
      if (typeof parsed.o !== 'string' || !URL.canParse(parsed.o) || typeof parsed.t !== 'number') return undefined;
      return { loginOrigin: parsed.o, issuedAt: parsed.t };
    },
  };
}
