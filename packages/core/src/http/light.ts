/**
 * Light request and response values for the pipeline's hot path. Hosts that
 * speak Fetch get real `Request`/`Response` objects at the edge (`app.fetch`);
 * the node:http adapter skips building them unless a handler asks for the
 * `Request`, which saves most of the per-request cost of undici's classes.
 */

import type { HeaderReader, RequestHead } from '../request-head.js';

export type { HeaderReader, RequestHead };

/** A request as the pipeline sees it: its head, its body, and the Fetch `Request` on demand. */
export interface IncomingRequest extends RequestHead {
  /** The body as bytes, or `null` for a bodiless method; read once. */
  body(): AsyncIterable<Uint8Array> | null;
  /** The Fetch `Request`, built on first use (its body is the same stream). */
  toRequest(): Request;
}

/** Wraps a Fetch `Request` as an {@link IncomingRequest}. */
export function incomingFromRequest(request: Request): IncomingRequest {
  return {
    method: request.method,
    url: request.url,
    headers: request.headers,
    body: () => (request.body as unknown as AsyncIterable<Uint8Array> | null) ?? null,
    toRequest: () => request,
  };
}

/**
 * Response headers without undici's `Headers`: a case-insensitive map with
 * `Set-Cookie` kept as a list, and the methods the pipeline and handlers use.
 */
export class LightHeaders {
  readonly #values = new Map<string, string>();
  readonly #cookies: string[] = [];

  constructor(init?: Record<string, string>) {
    if (init) for (const name in init) this.set(name, init[name] as string);
  }

  get(name: string): string | null {
    const key = name.toLowerCase();
    if (key === 'set-cookie') return this.#cookies.length ? this.#cookies.join(', ') : null;
    return this.#values.get(key) ?? null;
  }

  has(name: string): boolean {
    const key = name.toLowerCase();
    return key === 'set-cookie' ? this.#cookies.length > 0 : this.#values.has(key);
  }

  set(name: string, value: string): void {
    const key = name.toLowerCase();
    if (key === 'set-cookie') this.#cookies.splice(0, this.#cookies.length, value);
    else this.#values.set(key, value);
  }

  append(name: string, value: string): void {
    const key = name.toLowerCase();
    if (key === 'set-cookie') this.#cookies.push(value);
    else this.#values.set(key, this.#values.has(key) ? `${this.#values.get(key)}, ${value}` : value);
  }

  delete(name: string): void {
    const key = name.toLowerCase();
    if (key === 'set-cookie') this.#cookies.length = 0;
    else this.#values.delete(key);
  }

  /** Every header but `Set-Cookie`, lower-case names. */
  forEach(callback: (value: string, name: string) => void): void {
    for (const [name, value] of this.#values) callback(value, name);
  }

  getSetCookie(): string[] {
    return [...this.#cookies];
  }

  /** A Fetch `Headers` with the same content. */
  toHeaders(): Headers {
    const headers = new Headers();
    for (const [name, value] of this.#values) headers.set(name, value);
    for (const cookie of this.#cookies) headers.append('set-cookie', cookie);
    return headers;
  }
}

/** A response built by the helpers (`json`, `html`, `text`, `noContent`): status, headers and a string body. */
export class LightResponse {
  readonly status: number;
  readonly headers: LightHeaders;
  /** The body, or `null` for none. */
  readonly text: string | null;

  constructor(text: string | null, init: { status?: number; headers?: Record<string, string> } = {}) {
    this.status = init.status ?? 200;
    this.headers = new LightHeaders(init.headers);
    this.text = text;
  }

  /** The Fetch `Response` of this value. */
  toResponse(): Response {
    return new Response(this.text, { status: this.status, headers: this.headers.toHeaders() });
  }
}

/** What a route handler returns: a Fetch `Response` or a helper-built {@link LightResponse}. */
export type HandlerResponse = Response | LightResponse;

/** The Fetch `Response` of a handler response. */
export function toFetchResponse(response: HandlerResponse): Response {
  return response instanceof LightResponse ? response.toResponse() : response;
}
