import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { createOutboundLookup, type OutboundResolver, refuseHost } from '@idt/core';

/** What one HTTP attempt gave. */
export interface WebhookSendResult {
  /** The response status; 0 when no response came. */
  readonly status: number;
  readonly retryAfter: string | undefined;
  /** Why no response came (timeout, refused host, connection error). */
  readonly error: string | null;
  readonly durationMs: number;
}

/** Posts one webhook attempt. */
export type WebhookSender = (url: string, headers: Record<string, string>, body: string) => Promise<WebhookSendResult>;

/** Options of {@link createWebhookSender}. */
export interface WebhookSenderOptions {
  /**
   * Deliver to loopback and private hosts (local demos and tests only).
   * Cloud metadata and link-local addresses stay refused whatever it says.
   */
  readonly allowPrivateHosts: boolean;
  readonly timeoutMs: number;
  /** Resolves the endpoints' host names; the system resolver by default (tests inject one). */
  readonly resolve?: OutboundResolver;
}

/**
 * Creates the sender: node:http(s) with the outbound guard of `@idt/core`
 * (the address is resolved once, checked and used for the connection;
 * metadata addresses refused always, private ones unless allowed), a
 * timeout, and no redirects (a 3xx is an answer, a failure).
 */
export function createWebhookSender(options: WebhookSenderOptions): WebhookSender {
  const lookup = createOutboundLookup({
    allowPrivate: options.allowPrivateHosts,
    ...(options.resolve ? { resolve: options.resolve } : {}),
  });
  return (target, headers, body) =>
    new Promise((resolve) => {
      const started = performance.now();
      const done = (status: number, retryAfter: string | undefined, error: string | null) =>
        resolve({ status, retryAfter, error, durationMs: Math.round(performance.now() - started) });
      let url: URL;
      try {
        url = new URL(target);
      } catch {
        done(0, undefined, 'invalid URL');
        return;
      }
      if (url.protocol !== 'http:' && url.protocol !== 'https:')
        return done(0, undefined, `unsupported protocol ${url.protocol}`);
      const refused = refuseHost(url.hostname, options.allowPrivateHosts);
      if (refused) return done(0, undefined, refused.reason === 'metadata' ? 'metadata host refused' : 'private host refused');
      const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
      const request = send(
        url,
        {
          method: 'POST',
          headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
          lookup,
          timeout: options.timeoutMs,
          // One connection per attempt: nothing pooled outlives it, and every attempt resolves and checks the host again.
          agent: false,
        },
        (response) => {
          const retryAfter = response.headers['retry-after'];
          response.resume();
          response.on('end', () => done(response.statusCode ?? 0, retryAfter, null));
          response.on('error', (error) => done(response.statusCode ?? 0, retryAfter, error.message));
        },
      );
      request.on('timeout', () => request.destroy(new Error(`no answer within ${options.timeoutMs} ms`)));
      request.on('error', (error) => done(0, undefined, error.message.slice(0, 500)));
      request.end(body);
    });
}
