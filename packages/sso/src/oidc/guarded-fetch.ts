import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { createOutboundLookup, type OutboundResolver, refuseHost } from '@idt/core';

/** The default deadline of one request to an upstream OpenID provider: connecting, sending and reading. */
export const UPSTREAM_TIMEOUT_MS = 5_000;
/** The largest answer read from an upstream OpenID provider (discovery, keys, tokens, userinfo). */
export const UPSTREAM_MAX_BYTES = 1_048_576;

/** Why a request to an upstream could not be made or read. */
export type UpstreamTransportReason = 'timeout' | 'unreachable' | 'invalid-response';

/**
 * A request to an upstream provider that failed below HTTP: the deadline
 * passed (`timeout`), the host could not be reached or is refused by the
 * outbound guard (`unreachable`), or the answer was too large or not HTTP
 * (`invalid-response`). The message is for logs only.
 */
export class UpstreamTransportError extends Error {
  constructor(
    readonly reason: UpstreamTransportReason,
    message: string,
  ) {
    super(message);
    this.name = 'UpstreamTransportError';
  }
}

/** Options of {@link createGuardedFetch}. */
export interface GuardedFetchOptions {
  /**
   * Accept loopback and private hosts and plain http (local demos and
   * tests); cloud metadata addresses are refused whatever it says.
   */
  readonly allowPrivateHosts: boolean;
  /** The deadline of one request, in milliseconds ({@link UPSTREAM_TIMEOUT_MS}). */
  readonly timeoutMs?: number;
  /** The largest answer read, in bytes ({@link UPSTREAM_MAX_BYTES}). */
  readonly maxBytes?: number;
  /** Resolves host names; the system resolver by default. */
  readonly resolve?: OutboundResolver;
}

/** What openid-client hands its `customFetch`. */
export interface GuardedFetchInit {
  readonly method?: string;
  readonly headers?: Record<string, string> | Headers;
  readonly body?: unknown;
  readonly signal?: AbortSignal | null;
  readonly redirect?: string;
}

/** A `fetch` for openid-client's `customFetch`: one request, never a redirect. */
export type GuardedFetch = (url: string, init?: GuardedFetchInit) => Promise<Response>;

const NULL_BODY_STATUSES = new Set([101, 204, 205, 304]);

function bodyOf(body: unknown): Buffer | undefined {
  if (body === undefined || body === null) return undefined;
  if (typeof body === 'string') return Buffer.from(body, 'utf8');
  if (body instanceof URLSearchParams) return Buffer.from(body.toString(), 'utf8');
  if (body instanceof Uint8Array) return Buffer.from(body);
  if (body instanceof ArrayBuffer) return Buffer.from(new Uint8Array(body));
  throw new UpstreamTransportError('invalid-response', 'A streamed request body is not supported');
}

function headersOf(headers: GuardedFetchInit['headers']): Record<string, string> {
  if (!headers) return {};
  if (headers instanceof Headers) return Object.fromEntries(headers.entries());
  return { ...headers };
}

/**
 * A `fetch` through the outbound guard of `@idt/core`, for the requests an
 * OpenID relying party makes (discovery, keys, token, userinfo): https only
 * (http too where private hosts are allowed), redirects answered as they are,
 * one deadline for connecting, sending and reading, a size limit, and every
 * address a host resolves to judged before connecting. Failures reject with
 * an {@link UpstreamTransportError}.
 *
 * @example
 * const config = await client.discovery(issuer, clientId, secret, undefined, {
 *   [client.customFetch]: createGuardedFetch({ allowPrivateHosts: false }),
 * });
 */
export function createGuardedFetch(options: GuardedFetchOptions): GuardedFetch {
  const timeoutMs = options.timeoutMs ?? UPSTREAM_TIMEOUT_MS;
  const maxBytes = options.maxBytes ?? UPSTREAM_MAX_BYTES;
  const allowPrivate = options.allowPrivateHosts;
  const lookup = createOutboundLookup({ allowPrivate, ...(options.resolve ? { resolve: options.resolve } : {}) });
  return (input, init = {}) =>
    new Promise<Response>((done, fail) => {
      let url: URL;
      try {
        url = new URL(input);
      } catch {
        fail(new UpstreamTransportError('unreachable', `Not an absolute URL: ${input}`));
        return;
      }
      if (url.protocol !== 'https:' && !(allowPrivate && url.protocol === 'http:')) {
        fail(new UpstreamTransportError('unreachable', `Only https URLs are allowed: ${url.origin}`));
        return;
      }
      const refused = refuseHost(url.hostname, allowPrivate);
      if (refused) {
        fail(new UpstreamTransportError('unreachable', refused.message));
        return;
      }
      let body: Buffer | undefined;
      try {
        body = bodyOf(init.body);
      } catch (error) {
        fail(error);
        return;
      }
      const signal = init.signal ?? undefined;
      if (signal?.aborted) {
        fail(new UpstreamTransportError('timeout', 'The request was aborted before it started'));
        return;
      }
      let settled = false;
      const finish = (outcome: () => void) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        outcome();
      };
      const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
      const headers = headersOf(init.headers);
      if (body) headers['content-length'] = String(body.length);
      const request = send(url, { method: init.method ?? 'GET', headers, lookup, agent: false }, (response: IncomingMessage) => {
        const status = response.statusCode ?? 0;
        const chunks: Buffer[] = [];
        let size = 0;
        response.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > maxBytes) {
            request.destroy();
            finish(() =>
              fail(
                new UpstreamTransportError(
                  'invalid-response',
                  `${url.origin}${url.pathname} answered more than ${maxBytes} bytes`,
                ),
              ),
            );
          } else chunks.push(chunk);
        });
        response.on('end', () =>
          finish(() => {
            if (status < 200 || status > 599) {
              fail(new UpstreamTransportError('invalid-response', `${url.origin}${url.pathname} answered status ${status}`));
              return;
            }
            const responseHeaders = new Headers();
            for (const [name, value] of Object.entries(response.headers)) {
              if (value === undefined) continue;
              for (const item of Array.isArray(value) ? value : [value]) responseHeaders.append(name, item);
            }
            const content = NULL_BODY_STATUSES.has(status) ? null : Buffer.concat(chunks);
            done(new Response(content, { status, headers: responseHeaders }));
          }),
        );
        response.on('error', () =>
          finish(() => fail(new UpstreamTransportError('unreachable', `${url.origin} stopped answering`))),
        );
      });
      const timer = setTimeout(() => {
        request.destroy();
        finish(() =>
          fail(new UpstreamTransportError('timeout', `${url.origin}${url.pathname} did not answer within ${timeoutMs} ms`)),
        );
      }, timeoutMs);
      timer.unref?.();
      const onAbort = () => {
        request.destroy();
        finish(() => fail(new UpstreamTransportError('timeout', `The request to ${url.origin}${url.pathname} was aborted`)));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      request.on('error', (error: NodeJS.ErrnoException) =>
        finish(() =>
          fail(
            new UpstreamTransportError(
              'unreachable',
              error.code === 'EREFUSEDHOST'
                ? error.message
                : `${url.origin} could not be reached (${error.code ?? 'network error'})`,
            ),
          ),
        ),
      );
      request.end(body);
    });
}
