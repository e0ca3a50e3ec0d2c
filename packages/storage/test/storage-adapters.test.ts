import { createHash } from 'node:crypto';
import { createServer as createHttpServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createServer as createTcpServer, type Socket, type Server as TcpServer } from 'node:net';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { createS3BlobStore, signRequest } from '@idt/storage';
import { caller, createTestIdt, expectJson, expectProblem, seedWorld, type TestIdt, testDialects } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EICAR, filesBelow, PNG, storageDirectory, uploadForm } from './storage-helpers.js';

const REGION = 'eu-test-1';
const BUCKET = 'idt-files';
const ACCESS_KEY = 'AKIDIDTTEST';
const SECRET = 'test/secret+key';

interface StoredObject {
  readonly body: Buffer;
  readonly contentType: string;
}

/**
 * A tiny S3-compatible stub: path-style PutObject, GetObject and
 * DeleteObject on one bucket, objects in memory. Every request must carry a
 * well-formed SigV4 `Authorization` header whose signature matches the
 * request as the stub received it, and a PUT body must match its signed
 * SHA-256. This checks the adapter's requests; it is no proof that real S3
 * accepts them (there is no network here), which the AWS test vector in the
 * package's unit tests covers for the signing itself.
 */
async function startS3Stub() {
  const objects = new Map<string, StoredObject>();
  const log: Array<{ method: string; key: string; status: number }> = [];
  let failPuts = false;

  async function readBody(req: IncomingMessage): Promise<Buffer> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  }

  function verify(req: IncomingMessage): string | undefined {
    const authorization = req.headers.authorization ?? '';
    const match =
      /^AWS4-HMAC-SHA256 Credential=([^/]+)\/(\d{8})\/([^/]+)\/s3\/aws4_request,SignedHeaders=([a-z0-9;-]+),Signature=([0-9a-f]{64})$/.exec(
        authorization,
      );
    if (!match) return 'malformed Authorization header';
    const [, accessKey, day, region, signedHeaders, signature] = match;
    const amzDate = String(req.headers['x-amz-date'] ?? '');
    if (accessKey !== ACCESS_KEY || region !== REGION) return 'wrong credential scope';
    if (!/^\d{8}T\d{6}Z$/.test(amzDate) || amzDate.slice(0, 8) !== day) return 'bad x-amz-date';
    const names = (signedHeaders as string).split(';');
    for (const required of ['host', 'x-amz-content-sha256', 'x-amz-date'])
      if (!names.includes(required)) return `${required} unsigned`;
    const date = new Date(
      `${amzDate.slice(0, 4)}-${amzDate.slice(4, 6)}-${amzDate.slice(6, 8)}T${amzDate.slice(9, 11)}:${amzDate.slice(11, 13)}:${amzDate.slice(13, 15)}Z`,
    );
    const headers = Object.fromEntries(
      names
        .filter((name) => !['host', 'x-amz-date', 'x-amz-content-sha256'].includes(name))
        .map((name) => [name, String(req.headers[name])]),
    );
    const expected = signRequest({
      method: req.method ?? 'GET',
      url: new URL(req.url ?? '/', `http://${req.headers.host}`),
      headers,
      payloadHash: String(req.headers['x-amz-content-sha256']),
      region: REGION,
      accessKeyId: ACCESS_KEY,
      secretAccessKey: SECRET,
      date,
    });
    return expected.authorization?.endsWith(`Signature=${signature}`) ? undefined : 'SignatureDoesNotMatch';
  }

  const server: Server = createHttpServer(async (req, res) => {
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://stub').pathname);
    const key = path.replace(new RegExp(`^/${BUCKET}/`), '');
    const reply = (status: number, body = '', headers: Record<string, string> = {}) => {
      log.push({ method: req.method ?? '', key, status });
      res.writeHead(status, headers).end(body);
    };
    const problem = verify(req);
    const body = await readBody(req);
    if (problem) return reply(403, `<Error><Code>AccessDenied</Code><Message>${problem}</Message></Error>`);
    if (!path.startsWith(`/${BUCKET}/`)) return reply(404, '<Error><Code>NoSuchBucket</Code></Error>');
    if (req.method === 'PUT') {
      const hash = createHash('sha256').update(body).digest('hex');
      if (hash !== req.headers['x-amz-content-sha256'])
        return reply(400, '<Error><Code>XAmzContentSHA256Mismatch</Code></Error>');
      if (Number(req.headers['content-length']) !== body.length) return reply(400, '<Error><Code>IncompleteBody</Code></Error>');
      if (failPuts) return reply(500, '<Error><Code>InternalError</Code></Error>');
      objects.set(key, { body, contentType: String(req.headers['content-type']) });
      return reply(200);
    }
    if (req.method === 'GET') {
      const object = objects.get(key);
      if (!object) return reply(404, '<Error><Code>NoSuchKey</Code></Error>');
      return reply(200, object.body as unknown as string, {
        'content-type': object.contentType,
        'content-length': String(object.body.length),
      });
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
    failPuts(value: boolean) {
      failPuts = value;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * A fake clamd speaking INSTREAM: `zINSTREAM\0`, chunks prefixed by their
 * 4-byte big-endian length, a zero length at the end; it answers
 * `stream: Eicar-Test-Signature FOUND` when the stream holds the EICAR test
 * string, else `stream: OK`.
 */
async function startFakeClamd(port = 0) {
  const scans: Buffer[] = [];
  const sockets = new Set<Socket>();
  const server: TcpServer = createTcpServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    let buffer = Buffer.alloc(0);
    let commandSeen = false;
    const chunks: Buffer[] = [];
    socket.on('data', (data: Buffer) => {
      buffer = Buffer.concat([buffer, data]);
      if (!commandSeen) {
        if (buffer.length < 10) return;
        if (buffer.subarray(0, 10).toString('latin1') !== 'zINSTREAM\0') {
          socket.end('UNKNOWN COMMAND\0');
          return;
        }
        commandSeen = true;
        buffer = buffer.subarray(10);
      }
      while (buffer.length >= 4) {
        const length = buffer.readUInt32BE(0);
        if (length === 0) {
          const content = Buffer.concat(chunks);
          scans.push(content);
          socket.end(content.includes(EICAR) ? 'stream: Eicar-Test-Signature FOUND\0' : 'stream: OK\0');
          buffer = Buffer.alloc(0);
          return;
        }
        if (buffer.length < 4 + length) return;
        chunks.push(Buffer.from(buffer.subarray(4, 4 + length)));
        buffer = buffer.subarray(4 + length);
      }
    });
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    scans,
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

describe.each(testDialects())('S3 blob store and ClamAV scanning on %s', (dialect) => {
  let s3: Awaited<ReturnType<typeof startS3Stub>>;
  let clamd: Awaited<ReturnType<typeof startFakeClamd>>;
  let server: TestIdt;
  let call: ReturnType<typeof caller>;
  let world: Awaited<ReturnType<typeof seedWorld>>;

  beforeAll(async () => {
    s3 = await startS3Stub();
    clamd = await startFakeClamd();
    server = await createTestIdt({
      dialect,
      env: {
        IDT_STORAGE_DRIVER: 's3',
        IDT_S3_ENDPOINT: s3.endpoint,
        IDT_S3_REGION: REGION,
        IDT_S3_BUCKET: BUCKET,
        IDT_S3_ACCESS_KEY_ID: ACCESS_KEY,
        IDT_S3_SECRET_ACCESS_KEY: SECRET,
        IDT_CLAMAV_URL: `tcp://127.0.0.1:${clamd.port}`,
      },
    });
    call = caller(server);
    world = await seedWorld(server);
  });
  afterAll(async () => {
    await server.close();
    await s3.close();
    await clamd.close();
  });

  const spool = () => filesBelow(join(storageDirectory(server), '.s3-spool'));
  const rows = async () => Number((await server.database.db('storage_files').count({ n: '*' }))[0]?.n);

  it('stores a scanned upload in S3 with signed requests, downloads and deletes it', async () => {
    const scanned = clamd.scans.length;
    const uploaded = await expectJson(
      await uploadForm(server, world.a.tokens.user, { content: PNG, fileName: 'pixel.png' }, { bucket: 'images' }),
      201,
    );
    expect(clamd.scans.length).toBe(scanned + 1);
    expect(clamd.scans.at(-1)).toEqual(PNG);
    const key = `${world.a.organization.id}/${uploaded.fileId}`;
    expect(s3.objects.get(key)).toEqual({ body: PNG, contentType: 'image/png' });
    expect(s3.log.every((entry) => entry.status !== 403)).toBe(true);

    const download = await call('GET', `/v1/storage/files/${uploaded.fileId}/download`, { token: world.a.tokens.user });
    expect(download.status).toBe(200);
    expect(download.headers.get('content-length')).toBe(String(PNG.length));
    expect(download.headers.get('content-type')).toBe('image/png');
    expect(Buffer.from(await download.arrayBuffer())).toEqual(PNG);

    expect((await call('DELETE', `/v1/storage/files/${uploaded.fileId}`, { token: world.a.tokens.user })).status).toBe(204);
    expect(s3.objects.has(key)).toBe(false);
    expect(s3.log.filter((entry) => entry.key === key).map((entry) => `${entry.method} ${entry.status}`)).toEqual([
      'PUT 200',
      'GET 200',
      'DELETE 204',
    ]);
    expect(spool()).toEqual([]);
  });

  it('rejects an infected file with a validation problem keyed on file, and stores nothing', async () => {
    const objects = s3.objects.size;
    const count = await rows();
    const problem = await expectProblem(
      await uploadForm(server, world.a.tokens.user, { content: `prefix ${EICAR} suffix`, fileName: 'eicar.com.txt' }),
      400,
      'Validation.Failed',
    );
    expect(Object.keys(problem.errors)).toEqual(['file']);
    expect(problem.errors.file[0]).toContain('Eicar-Test-Signature');
    expect(clamd.scans.at(-1)?.toString()).toContain(EICAR);
    expect(s3.objects.size).toBe(objects);
    expect(await rows()).toBe(count);
    expect(spool()).toEqual([]);
  });

  it('answers 500 and keeps nothing when the object store fails', async () => {
    const count = await rows();
    s3.failPuts(true);
    try {
      const response = await uploadForm(server, world.a.tokens.user, { content: 'doomed', fileName: 'doomed.txt' });
      await expectProblem(response, 500, 'Server.Error');
    } finally {
      s3.failPuts(false);
    }
    expect(await rows()).toBe(count);
    expect(spool()).toEqual([]);
  });

  it('refuses uploads with 503 Storage.ScanUnavailable while clamd is down', async () => {
    const port = clamd.port;
    await clamd.close();
    try {
      const objects = s3.objects.size;
      await expectProblem(
        await uploadForm(server, world.a.tokens.user, { content: 'clean but unchecked', fileName: 'x.txt' }),
        503,
        'Storage.ScanUnavailable',
      );
      expect(s3.objects.size).toBe(objects);
      expect(spool()).toEqual([]);
    } finally {
      clamd = await startFakeClamd(port);
    }
    expect((await uploadForm(server, world.a.tokens.user, { content: 'back again', fileName: 'y.txt' })).status).toBe(201);
  });

  it('fails requests signed with the wrong secret (the stub checks every signature)', async () => {
    const wrong = createS3BlobStore({
      endpoint: s3.endpoint,
      region: REGION,
      bucket: BUCKET,
      accessKeyId: ACCESS_KEY,
      secretAccessKey: 'not-the-secret',
      spoolDirectory: join(storageDirectory(server), '.s3-spool'),
    });
    const staged = await wrong.stage(Readable.from([Buffer.from('hello')]));
    await expect(staged.commit('org/file', { contentType: 'text/plain' })).rejects.toMatchObject({
      name: 'S3Error',
      status: 403,
    });
    await staged.discard();
    const right = createS3BlobStore({
      endpoint: s3.endpoint,
      region: REGION,
      bucket: BUCKET,
      accessKeyId: ACCESS_KEY,
      secretAccessKey: SECRET,
      spoolDirectory: join(storageDirectory(server), '.s3-spool'),
    });
    const good = await right.stage(Readable.from([Buffer.from('hello')]));
    await good.commit('org/file', { contentType: 'text/plain' });
    const opened = await right.open('org/file');
    expect(opened?.sizeBytes).toBe(5);
    let text = '';
    for await (const chunk of opened?.body ?? []) text += String(chunk);
    expect(text).toBe('hello');
    expect(await right.open('org/missing')).toBeUndefined();
    await right.delete('org/file');
    expect(s3.objects.has('org/file')).toBe(false);
    expect(spool()).toEqual([]);
  });
});
