import { hash, randomBytes, timingSafeEqual } from 'node:crypto';

let lastMs = 0;
let sequence = 0;

/**
 * A new UUID version 7 (RFC 9562): time-ordered, so rows written together sit
 * together in indexes. Monotonic within one process.
 *
 * @example
 * newId(); // '01936f0e-5c4a-7b1e-9a3f-2d4c5e6f7a8b'
 */
export function newId(now: number = Date.now()): string {
  if (now <= lastMs) {
    sequence = (sequence + 1) & 0xfff;
    if (sequence === 0) lastMs += 1;
    now = lastMs;
  } else {
    lastMs = now;
    sequence = randomBytes(2).readUInt16BE(0) & 0x7ff;
  }
  const bytes = randomBytes(16);
  bytes.writeUIntBE(now, 0, 6);
  bytes[6] = 0x70 | ((sequence >> 8) & 0x0f);
  bytes[7] = sequence & 0xff;
  bytes[8] = 0x80 | ((bytes[8] ?? 0) & 0x3f);
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Whether a string is a UUID (any version), as GUID path parameters must be. */
export function isUuid(value: string): boolean {
  return UUID.test(value);
}

/** `bytes` random bytes as base64url without padding (a 256-bit secret by default). */
export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

/** The SHA-256 digest of a string, hex-encoded: how high-entropy secrets are stored. */
export function sha256Hex(value: string): string {
  return hash('sha256', value, 'hex');
}

/**
 * Compares two strings in time that does not depend on where they differ.
 * Strings of different lengths compare unequal (after a dummy comparison).
 */
export function constantTimeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a, 'utf8');
  const right = Buffer.from(b, 'utf8');
  if (left.length !== right.length) {
    timingSafeEqual(left, left);
    return false;
  }
  return timingSafeEqual(left, right);
}
