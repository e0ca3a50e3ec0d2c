import { generateSecret, generateURI, verify } from 'otplib';

/** RFC 6238 as authenticator apps expect it: SHA-1, 6 digits, 30-second steps. */
export const TOTP_PERIOD_SECONDS = 30;

/** A TOTP code as users type it: six digits (spaces are ignored). */
const CODE = /^\d{6}$/;

/** The code without the spaces people type in it, or `undefined` when it is not six digits. */
export function normalizeTotpCode(code: string): string | undefined {
  const compact = code.replace(/\s+/g, '');
  return CODE.test(compact) ? compact : undefined;
}

/** A new secret: 20 random bytes (160 bits, RFC 4226's recommendation) in Base32. */
export function newTotpSecret(): string {
  return generateSecret({ length: 20 });
}

/** The `otpauth://totp/...` URI authenticator apps read from the QR code. */
export function totpUri(issuer: string, label: string, secret: string): string {
  return generateURI({ issuer, label, secret, algorithm: 'sha1', digits: 6, period: TOTP_PERIOD_SECONDS });
}

/** The QR code of a URI as an SVG document. */
export async function qrSvg(uri: string): Promise<string> {
  // Loaded on the first enrolment, not at start-up.
  const QRCode = await import('qrcode');
  return QRCode.toString(uri, { type: 'svg', errorCorrectionLevel: 'M', margin: 2 });
}

/**
 * The RFC 6238 time step a six-digit code matches at `now`, one step of
 * drift either way, or `undefined` when it matches none.
 */
export async function matchingStep(secret: string, code: string, now: Date): Promise<number | undefined> {
  const result = await verify({
    secret,
    token: code,
    epoch: Math.floor(now.getTime() / 1000),
    epochTolerance: TOTP_PERIOD_SECONDS,
    algorithm: 'sha1',
    digits: 6,
    period: TOTP_PERIOD_SECONDS,
  });
  return result.valid && 'timeStep' in result ? result.timeStep : undefined;
}
