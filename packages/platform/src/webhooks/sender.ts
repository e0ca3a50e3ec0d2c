import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import { guardedLookup, isNonPublicAddress } from '@idt/oidc';

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
  /** Deliver to loopback and private hosts (local demos and tests only). */
  readonly allowPrivateHosts: boolean;
  readonly timeoutMs: number;
}

/** Whether a URL's host is a loopback or private literal address. */
export function isPrivateLiteral(url: URL): boolean {
  const literal = url.hostname.replace(/^\[|\]$/g, '');
  return isIP(literal) !== 0 && isNonPublicAddress(literal);
}

/**
 * Creates the sender: node:http(s) with the SSRF guard of back-channel
 * logout (the address is resolved once, checked and used for the
 * connection), a timeout, and no redirects (a 3xx is an answer, a failure).
 */
export function createWebhookSender(options: WebhookSenderOptions): WebhookSender {
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
      if (!options.allowPrivateHosts && isPrivateLiteral(url)) return done(0, undefined, 'private host refused');
      const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
      const request = send(
        url,
        {
          method: 'POST',
          headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
          lookup: guardedLookup(options.allowPrivateHosts) as never,
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
