const BASIC = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i;

/**
 * The client id of an HTTP Basic `Authorization` header. Client credentials
 * are form-encoded before Base64 (RFC 6749 2.3.1), so `+` is a space and
 * `%XX` an escape; a malformed header or escape gives `undefined`.
 */
export function basicClientId(header: string | undefined): string | undefined {
  const match = header ? BASIC.exec(header) : null;
  if (!match?.[1]) return undefined;
  const decoded = Buffer.from(match[1], 'base64').toString('utf8');
  const index = decoded.indexOf(':');
  if (index <= 0) return undefined;
  try {
    return decodeURIComponent(decoded.slice(0, index).replace(/\+/g, ' '));
  } catch {
    return undefined;
  }
}
