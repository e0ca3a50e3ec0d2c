import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { BlockList, isIP } from 'node:net';
import { type Clock, type Logger, randomToken, signJwt, silentLogger, systemClock } from '@idt/core';

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

const blocked = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4],
] as const) {
  blocked.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['64:ff9b::', 96],
  ['100::', 64],
  ['2001:db8::', 32],
  ['fc00::', 7],
  ['fe80::', 10],
  ['ff00::', 8],
] as const) {
  blocked.addSubnet(network, prefix, 'ipv6');
}

/**
 * Whether an address is loopback, private-range, link-local, unique-local
 * or otherwise not globally routable (the hosts SPEC 8.2 refuses).
 */
export function isNonPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 0) return true;
  if (family === 6 && address.toLowerCase().startsWith('::ffff:')) {
    const mapped = address.slice(7);
    if (isIP(mapped) === 4) return blocked.check(mapped, 'ipv4');
  }
  return blocked.check(address, family === 4 ? 'ipv4' : 'ipv6');
}

/** Thrown when a logout target resolves to a refused address. */
export class RefusedHostError extends Error {
  constructor(host: string) {
    super(`The back-channel logout host ${host} resolves to a loopback or private address, which is not allowed`);
    this.name = 'RefusedHostError';
  }
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/**
 * A DNS lookup that refuses non-public addresses. The connection uses the
 * address this lookup returns, so a host cannot rebind between check and connect.
 */
export function guardedLookup(allowPrivate: boolean) {
  return (hostname: string, options: { all?: boolean } | number, callback: LookupCallback) => {
    const opts = typeof options === 'number' ? { family: options } : options;
    dnsLookup(hostname, { ...opts, all: true }, (error, addresses) => {
      if (error) return callback(error, []);
      const list = addresses as LookupAddress[];
      if (!allowPrivate && list.some((entry) => isNonPublicAddress(entry.address))) {
        return callback(Object.assign(new RefusedHostError(hostname), { code: 'EREFUSEDHOST' }), []);
      }
      if ((opts as { all?: boolean }).all) return callback(null, list);
      const first = list[0];
      if (!first) return callback(Object.assign(new Error(`No address for ${hostname}`), { code: 'ENOTFOUND' }), []);
      return callback(null, first.address, first.family);
    });
  };
}

/** Posts a form with a timeout, through the guarded lookup; resolves with the status. */
export function postForm(
  url: URL,
  body: string,
  timeoutMs: number,
  allowPrivate: boolean,
  signal?: AbortSignal,
): Promise<number> {
  return new Promise((resolve, reject) => {
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      reject(new Error(`Unsupported protocol ${url.protocol}`));
      return;
    }
    const literal = url.hostname.replace(/^\[|\]$/g, '');
    if (!allowPrivate && isIP(literal) !== 0 && isNonPublicAddress(literal)) {
      reject(new RefusedHostError(url.hostname));
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
        lookup: guardedLookup(allowPrivate) as never,
        timeout: timeoutMs,
        ...(signal ? { signal } : {}),
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
  readonly signingKey: () => Promise<{ kid: string; alg: string } & Record<string, unknown>>;
  /** Deliver to loopback and private hosts too (local demos and tests only). */
  readonly allowPrivateHosts: boolean;
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
 * unless allowed.
 */
export function createBackchannelNotifier(options: BackchannelNotifierOptions) {
  const limits = options.limits ?? DEFAULT_BACKCHANNEL_LIMITS;
  const clock = options.clock ?? systemClock;
  const logger = options.logger ?? silentLogger;

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
      key as never,
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
          options.allowPrivateHosts,
        );
        if (status === 200 || status === 204) return { clientId: target.clientId, delivered: true, attempts: attempt };
        lastError = `HTTP ${status}`;
      } catch (error) {
        lastError = (error as Error).message;
        if (error instanceof RefusedHostError || (error as { code?: string }).code === 'EREFUSEDHOST') {
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
