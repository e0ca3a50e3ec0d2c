import type { JsonWebKey } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import {
  type Clock,
  createOutboundLookup,
  type Logger,
  type OutboundGuardOptions,
  OutboundRefusedError,
  type OutboundResolver,
  randomToken,
  refuseHost,
  signJwt,
  silentLogger,
  systemClock,
} from '@idt/core';

/** Delivery limits of back-channel logout (SPEC 8.2). */
export interface BackchannelLimits {
  /** Per-attempt timeout of one client, in milliseconds (3,000). */
  readonly perClientTimeoutMs: number;
  /** Pause before the single retry, in milliseconds (1,000). */
  readonly retryDelayMs: number;
  /** Budget of the whole delivery to every client, in milliseconds (10,000). */
  readonly overallTimeoutMs: number;
}

/** The limits of SPEC 8.2. */
export const DEFAULT_BACKCHANNEL_LIMITS: BackchannelLimits = Object.freeze({
  perClientTimeoutMs: 3000,
  retryDelayMs: 1000,
  overallTimeoutMs: 10_000,
});

/**
 * Posts a form with a timeout, through the outbound guard of `@idt/core`
 * (the address is resolved once, checked and used for the connection);
 * resolves with the status. Redirects are answers, never followed.
 */
function postForm(url: URL, body: string, timeoutMs: number, guard: OutboundGuardOptions): Promise<number> {
  return new Promise((resolve, reject) => {
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      reject(new Error(`Unsupported protocol ${url.protocol}`));
      return;
    }
    // node:http connects to a literal address without a lookup: judge it (and metadata host names) here.
    const refused = refuseHost(url.hostname, guard.allowPrivate);
    if (refused) {
      reject(refused);
      return;
    }
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const request = send(
      url,
      {
        method: 'POST',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          'content-length': Buffer.byteLength(body),
          'user-agent': 'idt-backchannel-logout',
        },
        lookup: createOutboundLookup(guard),
        timeout: timeoutMs,
        // One connection per attempt: nothing pooled outlives it, and every attempt resolves and checks the host again.
        agent: false,
      },
      (response) => {
        response.resume();
        response.on('end', () => resolve(response.statusCode ?? 0));
        response.on('error', reject);
      },
    );
    request.on('timeout', () =>
      request.destroy(Object.assign(new Error(`No answer within ${timeoutMs} ms`), { code: 'ETIMEDOUT' })),
    );
    request.on('error', reject);
    request.end(body);
  });
}

/** One client to notify. */
export interface BackchannelTarget {
  readonly clientId: string;
  readonly backchannelLogoutUri: string;
}

/** The outcome for one client. */
export interface BackchannelResult {
  readonly clientId: string;
  readonly delivered: boolean;
  readonly attempts: number;
  readonly error?: string;
}

/** Options of {@link createBackchannelNotifier}. */
export interface BackchannelNotifierOptions {
  readonly issuer: string;
  /** The key that signs id tokens (logout tokens use the same key). */
  readonly signingKey: () => Promise<JsonWebKey & { kid: string; alg: string }>;
  /**
   * Deliver to loopback and private hosts too (local demos and tests only).
   * Cloud metadata and link-local addresses stay refused whatever it says.
   */
  readonly allowPrivateHosts: boolean;
  /** Resolves the clients' host names; the system resolver by default (tests inject one). */
  readonly resolve?: OutboundResolver;
  readonly limits?: BackchannelLimits;
  /**
   * Stamps the logout token's `iat` and `exp`; the system clock by default.
   * The delivery limits are real time: they bound waiting on the network.
   */
  readonly clock?: Clock;
  readonly logger?: Logger;
}

/**
 * Back-channel logout (OpenID Connect Back-Channel Logout 1.0, SPEC 4.3 and
 * 8.2): a `logout+jwt` with the events claim, `sub` and `sid` and no
 * `nonce`, POSTed as `logout_token` to each client; 3 s per attempt, one
 * retry after 1 s, 10 s for all clients together; private hosts refused
 * unless allowed, cloud metadata addresses always (the guard of
 * `@idt/core`'s {@link createOutboundLookup}); redirects are not followed.
 */
export function createBackchannelNotifier(options: BackchannelNotifierOptions) {
  const limits = options.limits ?? DEFAULT_BACKCHANNEL_LIMITS;
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? silentLogger;
  const guard: OutboundGuardOptions = {
    allowPrivate: options.allowPrivateHosts,
    ...(options.resolve ? { resolve: options.resolve } : {}),
  };

  async function logoutToken(clientId: string, sub: string, sid: string): Promise<string> {
    const key = await options.signingKey();
    const iat = Math.floor(clock.now().getTime() / 1000);
    return signJwt(
      { typ: 'logout+jwt' },
      {
        iss: options.issuer,
        aud: clientId,
        iat,
        exp: iat + 120,
        jti: randomToken(16),
        sub,
        sid,
        events: { 'http://schemas.openid.net/event/backchannel-logout': {} },
      },
      key,
    );
  }

  async function deliverOne(target: BackchannelTarget, sub: string, sid: string, deadline: number): Promise<BackchannelResult> {
    const body = new URLSearchParams({ logout_token: await logoutToken(target.clientId, sub, sid) }).toString();
    let lastError = '';
    for (let attempt = 1; attempt <= 2; attempt++) {
      const remaining = deadline - Date.now();
      if (remaining <= 0) return { clientId: target.clientId, delivered: false, attempts: attempt - 1, error: 'overall timeout' };
      try {
        const status = await postForm(
          new URL(target.backchannelLogoutUri),
          body,
          Math.min(limits.perClientTimeoutMs, remaining),
          guard,
        );
        if (status === 200 || status === 204) return { clientId: target.clientId, delivered: true, attempts: attempt };
        lastError = status >= 300 && status < 400 ? `HTTP ${status}, redirect not followed` : `HTTP ${status}`;
      } catch (error) {
        lastError = (error as Error).message;
        if (error instanceof OutboundRefusedError || (error as { code?: string }).code === 'EREFUSEDHOST') {
          return { clientId: target.clientId, delivered: false, attempts: attempt, error: lastError };
        }
      }
      if (attempt === 1) {
        const pause = Math.min(limits.retryDelayMs, deadline - Date.now());
        if (pause > 0) await new Promise((resolve) => setTimeout(resolve, pause));
      }
    }
    return { clientId: target.clientId, delivered: false, attempts: 2, error: lastError };
  }

  return {
    /** Notifies every target in parallel within the overall budget; never throws. */
    async notify(targets: readonly BackchannelTarget[], sub: string, sid: string): Promise<BackchannelResult[]> {
      const deadline = Date.now() + limits.overallTimeoutMs;
      const results = await Promise.all(
        targets.map((target) =>
          deliverOne(target, sub, sid, deadline).catch((error: unknown) => ({
            clientId: target.clientId,
            delivered: false,
            attempts: 0,
            error: (error as Error).message,
          })),
        ),
      );
      for (const result of results) {
        if (result.delivered) logger.info('back-channel logout delivered', { ...result, sid });
        else logger.warn('back-channel logout failed', { ...result, sid });
      }
      return results;
    },
    logoutToken,
  };
}

/** A back-channel notifier. */
export type BackchannelNotifier = ReturnType<typeof createBackchannelNotifier>;
