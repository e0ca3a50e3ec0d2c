/**
 * The headers of every HTML page idt renders on the sign-in host (sign-in,
 * consent, logout, errors): a content security policy without inline
 * scripts whose `form-action` names the exact origins a form may lead to,
 * no framing, no caching and no referrer.
 *
 * `form-action` also governs the redirects that follow a form submission, so
 * it lists the page's own origin and the relying party's origin the flow
 * ends at (the request's `redirect_uri` or `post_logout_redirect_uri`), and
 * nothing else: a page injected with a foreign form cannot post credentials away.
 */

/** What a page may reach besides itself. */
export interface PageReach {
  /** URLs (or origins) a form on the page may lead to, after redirects. */
  readonly formTargets?: readonly (string | undefined | null)[];
  /** URLs (or origins) the page may load in frames (front-channel logout). */
  readonly frameTargets?: readonly (string | undefined | null)[];
}

/**
 * The distinct `http(s)` origins of `urls`, in order; anything else (custom
 * schemes of native apps, `javascript:`, unparsable text) is left out, so it
 * can never widen a policy.
 */
export function webOrigins(urls: readonly (string | undefined | null)[]): string[] {
  const origins = new Set<string>();
  for (const url of urls) {
    if (!url) continue;
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      continue;
    }
    if (parsed.protocol === 'https:' || parsed.protocol === 'http:') origins.add(parsed.origin);
  }
  return [...origins];
}

/** The content security policy of a page: no inline scripts, no other origins but those named. */
export function pageCsp(reach: PageReach = {}): string {
  const forms = webOrigins(reach.formTargets ?? []);
  const frames = webOrigins(reach.frameTargets ?? []);
  return [
    "default-src 'none'",
    "script-src 'self'",
    // D: passkeys (passkey.js fetches the WebAuthn options from the page's own origin)
    "connect-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    `form-action ${["'self'", ...forms].join(' ')}`,
    frames.length ? `frame-src ${frames.join(' ')}` : "frame-src 'none'",
    "base-uri 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

/** Every header of a rendered page (content type excluded). */
export function pageSecurityHeaders(reach: PageReach = {}): Record<string, string> {
  return {
    'content-security-policy': pageCsp(reach),
    'x-frame-options': 'DENY',
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
    'referrer-policy': 'no-referrer',
  };
}

/** Sets {@link pageSecurityHeaders} on a Koa context of oidc-provider. */
export function applyPageSecurityHeaders(ctx: { set(name: string, value: string): void }, reach: PageReach = {}): void {
  for (const [name, value] of Object.entries(pageSecurityHeaders(reach))) ctx.set(name, value);
}
