import { createHash } from 'node:crypto';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { createOutboundLookup, type Logger, type OutboundResolver, refuseHost, silentLogger } from '@idt/core';

/**
 * The breached-password port: whether a password appears in a list of
 * passwords exposed in data breaches. Implementations must not send the
 * password (or its full hash) anywhere.
 */
export interface BreachedPasswordCheck {
  /**
   * Whether the password is known to be breached.
   *
   * @throws when the list cannot be asked; the password policy then lets the password pass and logs it.
   */
  isBreached(password: string): Promise<boolean>;
}

/** Options of {@link createRangeBreachedPasswordCheck}. */
export interface RangeBreachedPasswordCheckOptions {
  /**
   * The range endpoint: the 5-character hash prefix is appended as a path
   * segment, e.g. `https://api.pwnedpasswords.com/range` (or a mirror of it).
   */
  readonly url: string;
  /** How long to wait for the whole answer, in milliseconds (2,000). */
  readonly timeoutMs?: number;
  /**
   * Allow loopback and private hosts (a mirror inside the network; true by
   * default, since the operator names the host). Cloud metadata addresses
   * are refused whatever it says.
   */
  readonly allowPrivateHosts?: boolean;
  /** Resolves the host name; the system resolver by default. */
  readonly resolve?: OutboundResolver;
  readonly logger?: Logger;
}

/** The largest answer read: a padded range answer is about 40 KB. */
const MAX_ANSWER_BYTES = 2 * 1024 * 1024;

/** GETs a URL through the outbound guard of `@idt/core` with a deadline; resolves with the status and the text. */
function get(
  url: URL,
  timeoutMs: number,
  allowPrivate: boolean,
  resolve?: OutboundResolver,
): Promise<{ status: number; text: string }> {
  return new Promise((done, fail) => {
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      fail(new Error(`Unsupported protocol ${url.protocol}`));
      return;
    }
    const refused = refuseHost(url.hostname, allowPrivate);
    if (refused) {
      fail(refused);
      return;
    }
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const request = send(
      url,
      {
        method: 'GET',
        headers: { 'add-padding': 'true', 'user-agent': 'idt-password-policy', accept: 'text/plain' },
        lookup: createOutboundLookup({ allowPrivate, ...(resolve ? { resolve } : {}) }),
        agent: false,
      },
      (response: IncomingMessage) => {
        const chunks: Buffer[] = [];
        let size = 0;
        response.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_ANSWER_BYTES) request.destroy(new Error('The range answer is too large'));
          else chunks.push(chunk);
        });
        response.on('end', () => done({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
        response.on('error', fail);
      },
    );
    // One deadline for connecting and reading: the sign-up or reset waits on it.
    const timer = setTimeout(
      () => request.destroy(Object.assign(new Error(`No answer within ${timeoutMs} ms`), { code: 'ETIMEDOUT' })),
      timeoutMs,
    );
    timer.unref?.();
    request.on('close', () => clearTimeout(timer));
    request.on('error', fail);
    request.end();
  });
}

/**
 * The k-anonymity range check of Have I Been Pwned's Pwned Passwords API
 * (or a mirror): only the first 5 hex characters of the password's SHA-1
 * leave the server, with `Add-Padding: true` so the answer's size says
 * nothing either; the suffix is looked up in the answer locally. Padding
 * entries (count 0) are ignored. Requests go through the outbound guard of
 * `@idt/core` and give up after `timeoutMs`.
 *
 * @example
 * const breached = createRangeBreachedPasswordCheck({ url: 'https://api.pwnedpasswords.com/range' });
 * await breached.isBreached('password1'); // true
 */
export function createRangeBreachedPasswordCheck(options: RangeBreachedPasswordCheckOptions): BreachedPasswordCheck {
  const base = new URL(options.url);
  const timeoutMs = options.timeoutMs ?? 2000;
  const allowPrivate = options.allowPrivateHosts ?? true;
  const logger = options.logger ?? silentLogger;
  return {
    async isBreached(password) {
      const digest = createHash('sha1').update(password, 'utf8').digest('hex').toUpperCase();
      const prefix = digest.slice(0, 5);
      const suffix = digest.slice(5);
      const url = new URL(base);
      url.pathname = `${url.pathname.replace(/\/+$/, '')}/${prefix}`;
      const answer = await get(url, timeoutMs, allowPrivate, options.resolve);
      if (answer.status !== 200) throw new Error(`The range endpoint answered ${answer.status}`);
      for (const line of answer.text.split('\n')) {
        const [entry = '', count = ''] = line.trim().split(':');
        if (entry.toUpperCase() === suffix) {
          const seen = Number.parseInt(count, 10);
          if (seen > 0) {
            logger.debug('a new password was found in the breached-password list');
            return true;
          }
        }
      }
      return false;
    },
  };
}
