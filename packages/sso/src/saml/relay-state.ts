/** The longest RelayState kept; longer values are dropped. */
export const MAX_RELAY_STATE_LENGTH = 1024;

/**
 * A RelayState reduced to a same-origin path, or `undefined` when it could
 * lead anywhere else: another origin, a protocol-relative `//host` or
 * `/\host` (browsers read backslashes as slashes), a non-http scheme,
 * control characters, or over {@link MAX_RELAY_STATE_LENGTH} characters.
 *
 * @param value - the RelayState as received or configured
 * @param origin - the origin sign-in happens on, such as `https://id.example.com`
 * @returns the path, query and fragment to redirect to, always starting with a single `/`
 *
 * @example
 * safeRelayState('/account?tab=security', 'https://id.example.com'); // '/account?tab=security'
 * safeRelayState('https://evil.example/', 'https://id.example.com'); // undefined
 */
export function safeRelayState(value: string | null | undefined, origin: string): string | undefined {
  if (typeof value !== 'string' || value === '' || value.length > MAX_RELAY_STATE_LENGTH) return undefined;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are exactly what is refused
  if (/[\u0000-\u001f\u007f\\]/.test(value)) return undefined;
  let base: URL;
  let target: URL;
  try {
    base = new URL(origin);
    target = new URL(value, base);
  } catch {
    return undefined;
  }
  if (target.protocol !== 'http:' && target.protocol !== 'https:') return undefined;
  if (target.origin !== base.origin) return undefined;
  const path = `${target.pathname}${target.search}${target.hash}`;
  return path.startsWith('//') ? undefined : path;
}
