/** Where the BFF serves the API proxy: `/api/*` maps onto the API base URL. */
export const API_MOUNT = '/api';

/** The realtime hub of the identity server, relative to the API base URL. */
export const UPSTREAM_HUB_PATH = '/hubs/realtime';

/** The hub as the browser reaches it through the BFF. */
export const BFF_HUB_PATH = `${API_MOUNT}${UPSTREAM_HUB_PATH}`;

/** An API base URL split into its origin and path prefix (no trailing slash). */
export interface ApiBase {
  readonly origin: string;
  readonly protocol: string;
  /** `''` or a prefix such as `/idt`. */
  readonly path: string;
}

/**
 * Parses the API base URL once, at construction.
 *
 * @throws TypeError when it is not an absolute http(s) URL without query or fragment.
 */
export function parseApiBase(apiBaseUrl: string): ApiBase {
  let url: URL;
  try {
    url = new URL(apiBaseUrl);
  } catch {
    throw new TypeError(`apiBaseUrl must be an absolute URL, not "${apiBaseUrl}"`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new TypeError(`apiBaseUrl must be an http or https URL, not "${apiBaseUrl}"`);
  }
  if (url.search || url.hash || url.username || url.password) {
    throw new TypeError('apiBaseUrl may not carry a query, a fragment or credentials');
  }
  return { origin: url.origin, protocol: url.protocol, path: url.pathname.replace(/\/+$/, '') };
}

const PERCENT_BYTE = /%([0-9a-fA-F]{2})/g;

/**
 * Whether a request path (still percent-encoded) could step outside the API
 * base once some server along the way decodes it: a `..` or `.` segment (also
 * `..;` as Java servers read it), a backslash or a NUL, checked at every
 * level of percent-decoding (`%2e%2e`, `%252e%252e`, `..%2f`, `%5c`).
 * WHATWG URL parsing already removed the plain `..` segments before a
 * `Request` exists; this catches what survives it.
 */
export function isTraversal(path: string): boolean {
  let current = path;
  for (let level = 0; level < 4; level++) {
    if (current.includes('\\') || current.includes('\0')) return true;
    for (const segment of current.split('/')) {
      const bare = segment.split(';')[0];
      if (bare === '..' || bare === '.') return true;
    }
    const decoded = current.replace(PERCENT_BYTE, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));
    if (decoded === current) return false;
    current = decoded;
  }
  return true; // encoded four times over: no legitimate client does that
}

/**
 * The `X-Forwarded-For` to send upstream: the peer address appended to the
 * incoming list when the BFF sits behind a trusted proxy, else the peer
 * address alone (a browser-supplied list would let a client pick the IP the
 * API rate-limits by).
 */
export function forwardedFor(
  incoming: string | string[] | null | undefined,
  remoteAddress: string | undefined,
  trustProxy: boolean,
): string | undefined {
  const list: string[] = [];
  if (trustProxy && incoming) {
    for (const value of Array.isArray(incoming) ? incoming : [incoming]) {
      for (const entry of value.split(',')) {
        const trimmed = entry.trim();
        if (trimmed) list.push(trimmed);
      }
    }
  }
  const peer = remoteAddress?.startsWith('::ffff:') ? remoteAddress.slice(7) : remoteAddress;
  if (peer && peer !== 'unknown') list.push(peer);
  return list.length > 0 ? list.join(', ') : undefined;
}
