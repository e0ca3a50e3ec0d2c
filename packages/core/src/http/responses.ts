import { LightResponse } from './light.js';

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

const HTML_ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/**
 * Escapes a value for HTML text and quoted attribute values (`null` and
 * `undefined` become the empty string).
 *
 * @example
 * html(`<h1>${escapeHtml(title)}</h1>`);
 */
export function escapeHtml(value: unknown): string {
  return String(value ?? '').replace(/[&<>"']/g, (char) => HTML_ESCAPES[char] ?? char);
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

/** An HTML response that no cache keeps and no other origin frames. */
export function html(body: string, init: { status?: number; headers?: Record<string, string> } = {}): LightResponse {
  return new LightResponse(body, {
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
