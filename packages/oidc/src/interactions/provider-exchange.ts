import type { IncomingMessage, ServerResponse } from 'node:http';
import { type HandlerResponse, LightResponse } from '@idt/core';
import type Provider from 'oidc-provider';
import type { InteractionResults } from 'oidc-provider';
import type { PageRequest } from './page-request.js';

/** A pending interaction, as oidc-provider answers `interactionDetails`. */
export type InteractionDetails = Awaited<ReturnType<Provider['interactionDetails']>>;

/**
 * The response side of oidc-provider's interaction API: it takes a node
 * `ServerResponse`, yet only ever sets headers on it. Reading the
 * interaction cookie may set one (koa's `cookies` clears a `.sig` cookie
 * whose signature does not match, or signs one again under the current
 * key); nothing writes a status or a body, since idt calls
 * `interactionResult` and answers the redirect itself.
 */
class HeaderCollector {
  readonly headers = new Map<string, number | string | string[]>();

  getHeader(name: string): number | string | string[] | undefined {
    return this.headers.get(name.toLowerCase());
  }

  setHeader(name: string, value: number | string | readonly string[]): this {
    this.headers.set(name.toLowerCase(), typeof value === 'object' ? [...value] : value);
    return this;
  }

  hasHeader(name: string): boolean {
    return this.headers.has(name.toLowerCase());
  }

  removeHeader(name: string): void {
    this.headers.delete(name.toLowerCase());
  }
}

/**
 * One sign-in page request's dealings with oidc-provider's interaction API
 * (`interactionDetails`, `interactionResult`), which take node's `req` and
 * `res`. The request is the node request, or for a Fetch request a stand-in
 * with its headers and TLS flag ({@link PageRequest.providerRequest}); the
 * response collects the headers the provider sets, and every answer of the
 * page carries them (its own headers win on a clash, as `writeHead`'s
 * always did over `setHeader`'s).
 */
export class ProviderExchange {
  readonly #request: PageRequest;
  #req: IncomingMessage | undefined;
  readonly #res = new HeaderCollector();

  constructor(request: PageRequest) {
    this.#request = request;
  }

  get #providerRequest(): IncomingMessage {
    this.#req ??= this.#request.providerRequest();
    return this.#req;
  }

  get #providerResponse(): ServerResponse {
    // The interaction API sets headers only (see HeaderCollector).
    return this.#res as unknown as ServerResponse;
  }

  /**
   * The interaction the request's cookie names.
   *
   * @throws SessionNotFound (of oidc-provider) when there is none, it expired or its session changed.
   */
  details(provider: Provider): Promise<InteractionDetails> {
    return provider.interactionDetails(this.#providerRequest, this.#providerResponse);
  }

  /**
   * Stores the interaction's result and answers the 303 back to the
   * provider, as `interactionFinished` would write it (`Location`,
   * `Content-Length: 0`); {@link respond} adds the headers collected.
   */
  async finish(provider: Provider, result: InteractionResults, mergeWithLastSubmission: boolean): Promise<LightResponse> {
    const returnTo = await provider.interactionResult(this.#providerRequest, this.#providerResponse, result, {
      mergeWithLastSubmission,
    });
    return new LightResponse(null, { status: 303, headers: { location: returnTo, 'content-length': '0' } });
  }

  /** Sets the sign-in session cookie of the answer (replacing what the provider set, as `res.setHeader` did). */
  setCookie(value: string): void {
    this.#res.setHeader('set-cookie', value);
  }

  /** `response` with the headers the provider set that it does not set itself. */
  respond<T extends HandlerResponse>(response: T): T {
    for (const [name, value] of this.#res.headers) {
      if (response.headers.has(name)) continue;
      if (Array.isArray(value)) for (const item of value) response.headers.append(name, item);
      else response.headers.set(name, String(value));
    }
    return response;
  }
}
