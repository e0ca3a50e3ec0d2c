import { createHash, randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { type Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { sweepFolder } from './local-files.js';
import { EMPTY_PAYLOAD_SHA256, encodeS3Key, signRequest } from './sigv4.js';
import { assertBlobKey, type BlobStore, type StagedBlob } from './store.js';

/** Options of {@link createS3BlobStore}. */
export interface S3BlobStoreOptions {
  /** `https://s3.eu-central-1.amazonaws.com`, `http://127.0.0.1:9000`… */
  readonly endpoint: string;
  readonly region: string;
  readonly bucket: string;
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  /** `endpoint/bucket/key` (true, the default: MinIO and most S3-compatible stores) or `bucket.endpoint/key`. */
  readonly forcePathStyle?: boolean;
  /** Prepended to every key, e.g. `idt/`. */
  readonly prefix?: string;
  /**
   * Where uploads are spooled before they are sent: S3 needs the length and
   * the hash of a body up front, and neither is known while the client is
   * still sending. Default: `<os tmpdir>/idt-s3-spool`.
   */
  readonly spoolDirectory?: string;
  /** Milliseconds without progress after which a request to the store fails (default 60,000). */
  readonly timeoutMs?: number;
}

/** A failed request to the object store. */
export class S3Error extends Error {
  readonly status: number;
  constructor(message: string, status: number) {
    super(message);
    this.name = 'S3Error';
    this.status = status;
  }
}

async function drain(response: IncomingMessage): Promise<string> {
  let text = '';
  for await (const chunk of response) if (text.length < 2000) text += String(chunk);
  return text.slice(0, 2000);
}

/**
 * A {@link BlobStore} on an S3-compatible object store, speaking the S3 REST
 * API with hand-written Signature Version 4 (PutObject, GetObject,
 * DeleteObject) instead of the AWS SDK. Uploads are spooled to a local
 * temporary file while their SHA-256 is computed, then sent with
 * `Content-Length` and the signed payload hash; downloads stream.
 *
 * @example
 * const blobs = createS3BlobStore({ endpoint: 'http://127.0.0.1:9000', region: 'us-east-1', bucket: 'idt', accessKeyId, secretAccessKey });
 */
export function createS3BlobStore(options: S3BlobStoreOptions): BlobStore {
  const endpoint = new URL(options.endpoint);
  const pathStyle = options.forcePathStyle ?? true;
  const prefix = options.prefix ?? '';
  const spool = resolve(options.spoolDirectory ?? join(tmpdir(), 'idt-s3-spool'));
  const timeoutMs = options.timeoutMs ?? 60_000;
  const basePath = endpoint.pathname.replace(/\/+$/, '');

  function urlOf(key: string): URL {
    assertBlobKey(key);
    const objectPath = encodeS3Key(`${prefix}${key}`);
    const url = new URL(endpoint.href);
    if (pathStyle) {
      url.pathname = `${basePath}/${encodeURIComponent(options.bucket)}/${objectPath}`;
    } else {
      url.hostname = `${options.bucket}.${endpoint.hostname}`;
      url.pathname = `${basePath}/${objectPath}`;
    }
    return url;
  }

  function send(
    method: string,
    url: URL,
    init: { headers?: Record<string, string>; payloadHash?: string; body?: Readable } = {},
  ): Promise<IncomingMessage> {
    const headers = signRequest({
      method,
      url,
      headers: init.headers ?? {},
      payloadHash: init.payloadHash ?? EMPTY_PAYLOAD_SHA256,
      region: options.region,
      accessKeyId: options.accessKeyId,
      secretAccessKey: options.secretAccessKey,
      date: new Date(),
    });
    const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
    return new Promise((resolvePromise, reject) => {
      const req = request(url, { method, headers, timeout: timeoutMs }, (response) => {
        // The body is read at the pace of whoever consumes it (a slow download): no idle timeout from here on.
        req.setTimeout(0);
        resolvePromise(response);
      });
      req.once('error', reject);
      req.once('timeout', () =>
        req.destroy(new S3Error(`The object store did not answer ${method} within ${timeoutMs} ms`, 504)),
      );
      if (init.body) {
        init.body.once('error', (error) => req.destroy(error));
        init.body.pipe(req);
      } else {
        req.end();
      }
    });
  }

  async function expectOk(response: IncomingMessage, what: string, accepted: number[] = [200]): Promise<void> {
    const status = response.statusCode ?? 0;
    const text = await drain(response);
    if (!accepted.includes(status)) throw new S3Error(`${what} failed with ${status}: ${text.replace(/\s+/g, ' ')}`, status);
  }

  return {
    kind: 's3',

    async stage(source: Readable): Promise<StagedBlob> {
      await mkdir(spool, { recursive: true, mode: 0o700 });
      const temp = join(spool, `${randomUUID()}.part`);
      const hash = createHash('sha256');
      let size = 0;
      const meter = new Transform({
        transform(chunk: Buffer, _encoding, callback) {
          hash.update(chunk);
          size += chunk.length;
          callback(null, chunk);
        },
      });
      try {
        await pipeline(source, meter, createWriteStream(temp, { flags: 'wx', mode: 0o600 }));
      } catch (error) {
        await rm(temp, { force: true });
        throw error;
      }
      const payloadHash = hash.digest('hex');
      let settled = false;
      const discard = async () => {
        if (settled) return;
        settled = true;
        await rm(temp, { force: true });
      };
      return {
        sizeBytes: size,
        read: () => createReadStream(temp),
        async commit(key, metadata) {
          if (settled) throw new Error('This staged blob was already committed or discarded');
          const response = await send('PUT', urlOf(key), {
            headers: { 'content-length': String(size), 'content-type': metadata.contentType },
            payloadHash,
            body: createReadStream(temp),
          });
          await expectOk(response, 'PutObject');
          await discard();
        },
        discard,
      };
    },

    async open(key) {
      const response = await send('GET', urlOf(key));
      if (response.statusCode === 404) {
        await drain(response);
        return undefined;
      }
      if (response.statusCode !== 200) {
        await expectOk(response, 'GetObject');
      }
      const length = Number(response.headers['content-length']);
      return { body: response, sizeBytes: Number.isFinite(length) ? length : 0 };
    },

    async delete(key) {
      await expectOk(await send('DELETE', urlOf(key)), 'DeleteObject', [200, 204, 404]);
    },

    sweep(olderThanMs) {
      return sweepFolder(spool, olderThanMs);
    },
  };
}
