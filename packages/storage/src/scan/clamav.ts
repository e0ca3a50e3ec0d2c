import { connect } from 'node:net';
import type { Readable } from 'node:stream';
import { ScanError, type Scanner, type ScanResult } from './scanner.js';

/** Options of {@link createClamAvScanner}. */
export interface ClamAvScannerOptions {
  /** The clamd address: `tcp://127.0.0.1:3310` (`IDT_CLAMAV_URL`). */
  readonly url: string;
  /** Milliseconds without progress after which a scan fails (default 60,000). */
  readonly timeoutMs?: number;
  /** The largest chunk sent to clamd at once (default 64 KiB; clamd's StreamMaxLength bounds the total). */
  readonly chunkBytes?: number;
}

/**
 * Parses a clamd reply to INSTREAM.
 *
 * @example
 * parseClamdReply('stream: OK'); // { clean: true }
 * parseClamdReply('stream: Eicar-Signature FOUND'); // { clean: false, signature: 'Eicar-Signature' }
 */
export function parseClamdReply(reply: string): ScanResult {
  const text = reply.replace(/\0/g, '').trim();
  if (/^(?:\d+: )?stream: OK$/.test(text)) return { clean: true };
  const found = /^(?:\d+: )?stream: (.+) FOUND$/.exec(text);
  if (found?.[1]) return { clean: false, signature: found[1] };
  throw new ScanError(`clamd answered ${JSON.stringify(text.slice(0, 200))}`);
}

/**
 * A {@link Scanner} on clamd's INSTREAM command over TCP: `zINSTREAM\0`, then
 * the content in chunks, each preceded by its length as a 4-byte big-endian
 * integer, then a zero length; clamd answers `stream: OK` or
 * `stream: <signature> FOUND`. The content streams with back-pressure, so a
 * scan never holds the file in memory. Off unless `IDT_CLAMAV_URL` is set.
 *
 * @example
 * const scanner = createClamAvScanner({ url: 'tcp://127.0.0.1:3310' });
 * const result = await scanner.scan(createReadStream(path));
 */
export function createClamAvScanner(options: ClamAvScannerOptions): Scanner {
  const url = new URL(options.url);
  if (url.protocol !== 'tcp:' || !url.hostname || !url.port) {
    throw new TypeError(`The clamd URL must be tcp://host:port, got ${options.url}`);
  }
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const port = Number(url.port);
  const timeoutMs = options.timeoutMs ?? 60_000;
  const chunkBytes = options.chunkBytes ?? 65_536;

  return {
    kind: 'clamav',
    scan(content: Readable): Promise<ScanResult> {
      return new Promise<ScanResult>((resolve, reject) => {
        const socket = connect({ host, port });
        let reply = '';
        let settled = false;
        let replied = false;
        const finish = (error: Error | undefined, result?: ScanResult) => {
          if (settled) return;
          settled = true;
          socket.destroy();
          content.destroy();
          if (error)
            reject(error instanceof ScanError ? error : new ScanError(`clamd failed: ${error.message}`, { cause: error }));
          else resolve(result as ScanResult);
        };
        const onReply = () => {
          if (settled) return;
          try {
            finish(undefined, parseClamdReply(reply));
          } catch (error) {
            finish(error as Error);
          }
        };
        socket.setTimeout(timeoutMs, () => finish(new ScanError(`clamd did not answer within ${timeoutMs} ms`)));
        socket.on('error', (error) => finish(error));
        socket.on('data', (data: Buffer) => {
          reply += data.toString('latin1');
          if (reply.includes('\0')) {
            replied = true;
            onReply();
          }
        });
        socket.on('end', () => {
          if (!replied) onReply();
        });
        content.on('error', (error) =>
          finish(new ScanError(`Could not read the file to scan: ${error.message}`, { cause: error })),
        );

        const write = (data: Buffer) =>
          socket.write(data) ? Promise.resolve() : new Promise<void>((done) => socket.once('drain', done));

        socket.once('connect', async () => {
          try {
            await write(Buffer.from('zINSTREAM\0', 'latin1'));
            for await (const piece of content) {
              const chunk = Buffer.isBuffer(piece) ? piece : Buffer.from(piece as Uint8Array);
              for (let offset = 0; offset < chunk.length && !settled; offset += chunkBytes) {
                const part = chunk.subarray(offset, offset + chunkBytes);
                const header = Buffer.alloc(4);
                header.writeUInt32BE(part.length, 0);
                await write(header);
                await write(part);
              }
              // clamd answers early (and closes) when the stream exceeds its StreamMaxLength.
              if (settled || replied) return;
            }
            await write(Buffer.alloc(4));
          } catch (error) {
            finish(error as Error);
          }
        });
      });
    },
  };
}
