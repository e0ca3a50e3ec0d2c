import type { IncomingMessage } from 'node:http';
import {
  type HandlerResponse,
  type HeaderReader,
  LightResponse,
  type ModuleSurface,
  type RequestInfo,
  toFetchResponse,
} from '@idt/core';
import { writeFetchResponse } from '@idt/core/node';

/**
 * A request to the sign-in or account pages, whichever entry point it came
 * through: the node handler hands its `IncomingMessage` over as it is, the
 * Fetch entry point its `Request`. The pages read nothing else.
 */
export interface PageRequest {
  readonly method: string;
  /** The request URL (the deployment prefix still in its path). */
  readonly url: URL;
  /** The request headers (lower-case names). */
  readonly headers: HeaderReader;
  /** The peer address, when the host says. */
  readonly remoteAddress: string | undefined;
  /** The body, read once; `null` without one. */
  body(): AsyncIterable<Uint8Array> | null;
  /**
   * The request as oidc-provider's interaction API reads it
   * (`provider.interactionDetails(req, res)`): its cookies, and whether it
   * came over TLS (or, behind a trusted proxy, said so). The node request
   * itself, or for a Fetch `Request` a small stand-in with those parts.
   */
  providerRequest(): IncomingMessage;
}

/** A page handler: the answer, or `undefined` to decline the request. */
export type PageHandler = (request: PageRequest) => Promise<HandlerResponse | undefined>;

/** A node request as a {@link PageRequest}. A class, so that every request has one shape. */
class NodePageRequest implements PageRequest {
  readonly method: string;
  readonly url: URL;
  readonly headers: HeaderReader;
  readonly remoteAddress: string | undefined;
  readonly #req: IncomingMessage;

  constructor(req: IncomingMessage) {
    this.#req = req;
    this.method = req.method ?? 'GET';
    this.url = new URL(req.url ?? '/', 'http://localhost');
    this.headers = new NodeHeaders(req);
    this.remoteAddress = req.socket.remoteAddress;
  }

  body(): AsyncIterable<Uint8Array> {
    return this.#req;
  }

  providerRequest(): IncomingMessage {
    return this.#req;
  }
}

class NodeHeaders implements HeaderReader {
  readonly #req: IncomingMessage;

  constructor(req: IncomingMessage) {
    this.#req = req;
  }

  get(name: string): string | null {
    const value = this.#req.headers[name];
    if (value === undefined) return null;
    return Array.isArray(value) ? value.join(', ') : value;
  }
}

/** A Fetch `Request` as a {@link PageRequest}. */
class FetchPageRequest implements PageRequest {
  readonly method: string;
  readonly url: URL;
  readonly headers: HeaderReader;
  readonly remoteAddress: string | undefined;
  readonly #request: Request;

  constructor(request: Request, info: RequestInfo) {
    this.#request = request;
    this.method = request.method;
    this.url = new URL(request.url);
    this.headers = request.headers;
    this.remoteAddress = info.remoteAddress;
  }

  body(): AsyncIterable<Uint8Array> | null {
    return (this.#request.body as unknown as AsyncIterable<Uint8Array> | null) ?? null;
  }

  /**
   * What `interactionDetails` and `interactionResult` read of a request:
   * Koa's context over it reads the `Cookie` header (and `X-Forwarded-Proto`
   * behind a trusted proxy) from `headers`, and TLS from `socket.encrypted`.
   * Nothing reads its body.
   */
  providerRequest(): IncomingMessage {
    const headers: Record<string, string> = {};
    this.#request.headers.forEach((value, name) => {
      headers[name] = value;
    });
    headers.host ??= this.url.host;
    const stand: ProviderRequestStandIn = {
      method: this.method,
      url: `${this.url.pathname}${this.url.search}`,
      headers,
      socket: { encrypted: this.url.protocol === 'https:', remoteAddress: this.remoteAddress },
    };
    return stand as unknown as IncomingMessage;
  }
}

/** The parts of an `IncomingMessage` oidc-provider's interaction API reads (see {@link FetchPageRequest.providerRequest}). */
interface ProviderRequestStandIn {
  readonly method: string;
  readonly url: string;
  readonly headers: Record<string, string>;
  readonly socket: { readonly encrypted: boolean; readonly remoteAddress: string | undefined };
}

/**
 * A page handler served through both entry points of idt as a module
 * surface, without the node:http bridge: the Fetch entry point hands it the
 * `Request` (a HEAD answer without its body), the node entry point its
 * `IncomingMessage`, and the answer is written to the node response the way
 * the API pipeline writes its own.
 */
export function pageSurface(name: string, matches: (path: string) => boolean, handler: PageHandler): ModuleSurface {
  return {
    name,
    matches,
    async node(req, res) {
      const response = await handler(new NodePageRequest(req));
      if (!response) return false;
      await writeFetchResponse(res, response);
      return true;
    },
    async fetch(request, info = {}) {
      const response = await handler(new FetchPageRequest(request, info));
      if (!response) return undefined;
      if (response.status === 413) response.headers.set('connection', 'close');
      if (request.method !== 'HEAD') return toFetchResponse(response);
      return new Response(null, {
        status: response.status,
        headers: response instanceof LightResponse ? response.headers.toHeaders() : response.headers,
      });
    },
  };
}

/** A form body that passed its size limit. */
export class FormTooLarge extends Error {}

/**
 * The bytes of a request body, up to `maxBytes`.
 *
 * @throws FormTooLarge past `maxBytes` (the rest is not read).
 */
export async function readBodyBytes(request: PageRequest, maxBytes: number): Promise<Buffer> {
  const body = request.body();
  if (!body) return Buffer.alloc(0);
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > maxBytes) throw new FormTooLarge();
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}
