/** Any origin works as the base: only whether a value stays on it matters. */
const BASE = 'http://bff.invalid';

/** The longest return path kept. */
const MAX_RETURN_TO_LENGTH = 2048;

/**
 * The path to land on after sign-in: a same-origin path (`/…`, with its
 * query and fragment), or `/` for anything else — absolute URLs,
 * protocol-relative `//host`, backslash tricks (`/\host`), control
 * characters, overly long values. Never refused, only replaced.
 *
 * @example
 * safeReturnTo('/orders?page=2'); // '/orders?page=2'
 * safeReturnTo('//evil.com');     // '/'
 */
export function safeReturnTo(value: string | null | undefined): string {
  if (!value || value.length > MAX_RETURN_TO_LENGTH) return '/';
  if (!value.startsWith('/') || value.startsWith('//') || value.includes('\\')) return '/';
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is refused
  if (/[\u0000-\u001f\u007f]/.test(value)) return '/';
  let url: URL;
  try {
    url = new URL(value, BASE);
  } catch {
    return '/';
  }
  if (url.origin !== BASE) return '/';
  return `${url.pathname}${url.search}${url.hash}`;
}

/** A return path with the provider's `error` (and `error_description`) added to its query. */
export function withAuthorizationError(returnTo: string, error: string, description: string | null): string {
  const url = new URL(returnTo, BASE);
  url.searchParams.set('error', error);
  if (description) url.searchParams.set('error_description', description);
  return `${url.pathname}${url.search}${url.hash}`;
}
