import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { createOutboundLookup, type OutboundResolver, refuseHost } from '@idt/core';
import { ProblemError } from '@idt/problem';
import '../problems.js';

/** Reads IdP metadata from a URL. */
export type MetadataFetcher = (url: string) => Promise<string>;

/** Options of {@link createMetadataFetcher}. */
export interface MetadataFetcherOptions {
  /**
   * Accept loopback and private hosts and plain http (local demos and
   * tests); cloud metadata addresses are refused whatever it says.
   */
  readonly allowPrivateHosts: boolean;
  /** The deadline for connecting and reading, in milliseconds (5,000). */
  readonly timeoutMs?: number;
  /** The largest document read, in bytes (1 MiB). */
  readonly maxBytes?: number;
  /** Resolves host names; the system resolver by default. */
  readonly resolve?: OutboundResolver;
}

/** The default deadline of a metadata fetch. */
export const METADATA_FETCH_TIMEOUT_MS = 5_000;
/** The default size limit of a metadata document. */
export const METADATA_MAX_BYTES = 1_048_576;

function unreachable(detail: string): ProblemError {
  return new ProblemError('Sso.MetadataUnreachable', detail);
}

/**
 * A {@link MetadataFetcher} through the outbound guard of `@idt/core`:
 * https only (http too where private hosts are allowed), no redirects, one
 * deadline for connecting and reading, a size limit, and every address the
 * host resolves to judged before connecting.
 *
 * @throws ProblemError `Sso.MetadataUnreachable` with a sentence a person can act on
 *
 * @example
 * const fetchMetadata = createMetadataFetcher({ allowPrivateHosts: false });
 * const xml = await fetchMetadata('https://login.example.com/app/metadata');
 */
export function createMetadataFetcher(options: MetadataFetcherOptions): MetadataFetcher {
  const timeoutMs = options.timeoutMs ?? METADATA_FETCH_TIMEOUT_MS;
  const maxBytes = options.maxBytes ?? METADATA_MAX_BYTES;
  const allowPrivate = options.allowPrivateHosts;
  return (input) =>
    new Promise((done, fail) => {
      let url: URL;
      try {
        url = new URL(input);
      } catch {
        fail(new ProblemError('Sso.InvalidConnection', 'The metadata URL is not an absolute URL.'));
        return;
      }
      const httpAllowed = allowPrivate && url.protocol === 'http:';
      if (url.protocol !== 'https:' && !httpAllowed) {
        fail(new ProblemError('Sso.InvalidConnection', 'The metadata URL must be an https URL.'));
        return;
      }
      if (url.username || url.password) {
        fail(new ProblemError('Sso.InvalidConnection', 'The metadata URL must not carry credentials.'));
        return;
      }
      const refused = refuseHost(url.hostname, allowPrivate);
      if (refused) {
        fail(unreachable(`${url.hostname} is a loopback, private or cloud metadata address, which idt does not fetch from.`));
        return;
      }
      const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
      let settled = false;
      const finish = (outcome: () => void) => {
        if (settled) return;
        settled = true;
        outcome();
      };
      const request = send(
        url,
        {
          method: 'GET',
          headers: { accept: 'application/samlmetadata+xml, application/xml, text/xml', 'user-agent': 'idt-sso' },
          lookup: createOutboundLookup({ allowPrivate, ...(options.resolve ? { resolve: options.resolve } : {}) }),
          agent: false,
        },
        (response: IncomingMessage) => {
          const status = response.statusCode ?? 0;
          if (status !== 200) {
            response.resume();
            request.destroy();
            finish(() =>
              fail(unreachable(`The metadata URL answered ${status}; idt needs 200 with the XML (redirects are not followed).`)),
            );
            return;
          }
          const chunks: Buffer[] = [];
          let size = 0;
          response.on('data', (chunk: Buffer) => {
            size += chunk.length;
            if (size > maxBytes) {
              request.destroy();
              finish(() => fail(unreachable(`The metadata is larger than ${maxBytes} bytes.`)));
            } else chunks.push(chunk);
          });
          response.on('end', () => finish(() => done(Buffer.concat(chunks).toString('utf8'))));
          response.on('error', () => finish(() => fail(unreachable('The metadata URL stopped answering.'))));
        },
      );
      const timer = setTimeout(() => {
        request.destroy();
        finish(() => fail(unreachable(`The metadata URL did not answer within ${timeoutMs} ms.`)));
      }, timeoutMs);
      timer.unref?.();
      request.on('close', () => clearTimeout(timer));
      request.on('error', (error: NodeJS.ErrnoException) =>
        finish(() =>
          fail(
            unreachable(
              error.code === 'EREFUSEDHOST'
                ? `${url.hostname} resolves to a loopback, private or cloud metadata address, which idt does not fetch from.`
                : `The metadata URL could not be reached (${error.code ?? 'network error'}).`,
            ),
          ),
        ),
      );
      request.end();
    });
}
