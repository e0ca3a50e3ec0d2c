import { createHash } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { signRequest } from '@idt/storage';

/** The bucket and credentials the stub accepts; a store signing with anything else is refused with 403. */
export const S3_STUB_ACCOUNT = {
  region: 'eu-test-1',
  bucket: 'idt-files',
  accessKeyId: 'AKIDIDTTEST',
  secretAccessKey: 'test/secret+key',
} as const;

/** An object the stub holds. */
export interface S3StubObject {
  readonly body: Buffer;
  readonly contentType: string;
}

/** A running {@link startS3Stub}. */
export interface S3Stub {
  /** The objects by key (without the bucket). */
  readonly objects: Map<string, S3StubObject>;
  /** Every request answered, in order. */
  readonly log: Array<{ method: string; key: string; status: number }>;
  /** `http://127.0.0.1:<port>`, the endpoint to give `createS3BlobStore`. */
  readonly endpoint: string;
  /** While true, every PUT that passes its checks is answered 500. */
  failPuts(value: boolean): void;
  close(): Promise<void>;
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** Why the stub refuses a request's signature, or `undefined` when it matches the request as received. */
function signatureProblem(req: IncomingMessage): string | undefined {
  const { region, accessKeyId, secretAccessKey } = S3_STUB_ACCOUNT;
  const match =
    /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/s3\/aws4_request,SignedHeaders=([a-z0-9;-]+),Signature=([0-9a-f]{64})$/.exec(
      req.headers.authorization ?? '',
    );
  if (!match) return 'malformed Authorization header';
  const [, accessKey, day, scopeRegion, signedHeaders = '', signature] = match;
  const amzDate = String(req.headers['x-amz-date'] ?? '');
  if (accessKey !== accessKeyId || scopeRegion !== region) return 'wrong credential scope';
  if (!/^\d{8}T\d{6}Z$/.test(amzDate) || amzDate.slice(0, 8) !== day) return 'bad x-amz-date';
  const names = signedHeaders.split(';');
  for (const required of ['host', 'x-amz-content-sha256', 'x-amz-date'])
    if (!names.includes(required)) return `${required} unsigned`;
  const date = new Date(
    `${amzDate.slice(0, 4)}-${amzDate.slice(4, 6)}-${amzDate.slice(6, 8)}T${amzDate.slice(9, 11)}:${amzDate.slice(11, 13)}:${amzDate.slice(13, 15)}Z`,
  );
  const expected = signRequest({
    method: req.method ?? 'GET',
    url: new URL(req.url ?? '/', `http://${req.headers.host}`),
    headers: Object.fromEntries(
      names
        .filter((name) => !['host', 'x-amz-date', 'x-amz-content-sha256'].includes(name))
        .map((name) => [name, String(req.headers[name])]),
    ),
    payloadHash: String(req.headers['x-amz-content-sha256']),
    region,
    accessKeyId,
    secretAccessKey,
    date,
  });
  return expected.authorization?.endsWith(`Signature=${signature}`) ? undefined : 'SignatureDoesNotMatch';
}

/**
 * A tiny S3-compatible server on a loopback port: path-style PutObject,
 * GetObject and DeleteObject on one bucket ({@link S3_STUB_ACCOUNT}), objects
 * in memory. Every request must carry a SigV4 `Authorization` header whose
 * signature matches the request as received, and a PUT body must match its
 * signed SHA-256 and `Content-Length`. It checks the adapter's requests; it
 * is no proof that real S3 accepts them (the AWS test vector in the
 * package's unit tests covers the signing itself).
 *
 * @example
 * const s3 = await startS3Stub();
 * const blobs = createS3BlobStore({ endpoint: s3.endpoint, ...S3_STUB_ACCOUNT });
 */
export async function startS3Stub(): Promise<S3Stub> {
  const { bucket } = S3_STUB_ACCOUNT;
  const objects = new Map<string, S3StubObject>();
  const log: S3Stub['log'] = [];
  let failPuts = false;

  const server: Server = createServer(async (req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://stub').pathname);
    const key = path.replace(new RegExp(`^/${bucket}/`), '');
    const reply = (status: number, body: string | Buffer = '', headers: Record<string, string> = {}) => {
      log.push({ method: req.method ?? '', key, status });
      res.writeHead(status, headers).end(body);
    };
    const problem = signatureProblem(req);
    const body = await readBody(req);
    if (problem) return reply(403, `<Error><Code>AccessDenied</Code><Message>${problem}</Message></Error>`);
    if (!path.startsWith(`/${bucket}/`)) return reply(404, '<Error><Code>NoSuchBucket</Code></Error>');
    if (req.method === 'PUT') {
      if (createHash('sha256').update(body).digest('hex') !== req.headers['x-amz-content-sha256'])
        return reply(400, '<Error><Code>XAmzContentSHA256Mismatch</Code></Error>');
      if (Number(req.headers['content-length']) !== body.length) return reply(400, '<Error><Code>IncompleteBody</Code></Error>');
      if (failPuts) return reply(500, '<Error><Code>InternalError</Code></Error>');
      objects.set(key, { body, contentType: String(req.headers['content-type']) });
      return reply(200);
    }
    if (req.method === 'GET') {
      const object = objects.get(key);
      if (!object) return reply(404, '<Error><Code>NoSuchKey</Code></Error>');
      return reply(200, object.body, { 'content-type': object.contentType, 'content-length': String(object.body.length) });
    }
    if (req.method === 'DELETE') {
      objects.delete(key);
      return reply(204);
    }
    return reply(405);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    objects,
    log,
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    failPuts(value) {
      failPuts = value;
    },
    close: () =>
      new Promise<void>((resolve) => {
        // Keep-alive sockets of the store's agent would hold `close` open.
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
