import { LightResponse } from './light.js';
import type { SafeHtml } from './markup.js';

/**
 * A JSON response.
 *
 * @example
 * return json({ setupRequired: true });
 * return json(record, { status: 201, headers: { location: `${ctx.prefix}/v1/things/${record.id}` } });
 */
export function json(body: unknown, init: { status?: number; headers?: Record<string, string> } = {}): LightResponse {
  return new LightResponse(JSON.stringify(body), {
    status: init.status ?? 200,
    headers: { 'content-type': 'application/json; charset=utf-8', ...init.headers },
  });
}

/** A 204 response. */
export function noContent(headers: Record<string, string> = {}): LightResponse {
  return new LightResponse(null, { status: 204, headers });
}

/**
 * The `Strict-Transport-Security` value idt sends on every response when its
 * public URL is https (never over http, where browsers ignore it): one year,
 * this host only. `includeSubDomains` and `preload` are a decision about the
 * whole domain, left to the host that owns it.
 */
export const STRICT_TRANSPORT_SECURITY = 'max-age=31536000';

/** The `Strict-Transport-Security` value for a public base URL: {@link STRICT_TRANSPORT_SECURITY} on https, none on http. */
export function strictTransportSecurityFor(publicBaseUrl: string): string | undefined {
  return publicBaseUrl.startsWith('https:') ? STRICT_TRANSPORT_SECURITY : undefined;
}

/**
 * An HTML response that no cache keeps and no other origin frames; the body
 * is best built with the `markup` tag.
 *
 * @example
 * return html(markup`<h1>${title}</h1>`, { status: 404 });
 */
export function html(body: string | SafeHtml, init: { status?: number; headers?: Record<string, string> } = {}): LightResponse {
  return new LightResponse(typeof body === 'string' ? body : body.text, {
    status: init.status ?? 200,
    headers: {
      'content-type': 'text/html; charset=utf-8',
      'cache-control': 'no-store',
      'x-frame-options': 'DENY',
      ...init.headers,
    },
  });
}

/** A plain-text response. */
export function text(body: string, init: { status?: number; headers?: Record<string, string> } = {}): LightResponse {
  return new LightResponse(body, {
    status: init.status ?? 200,
    headers: { 'content-type': 'text/plain; charset=utf-8', ...init.headers },
  });
}
