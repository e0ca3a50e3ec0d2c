import type { AddressInfo } from 'node:net';
import { createServer as createTcpServer, type Socket, type Server as TcpServer } from 'node:net';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { createS3BlobStore } from '@idt/storage';
import { caller, createTestIdt, expectJson, expectProblem, seedWorld, type TestIdt, testDialects } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { S3_STUB_ACCOUNT, type S3Stub, startS3Stub } from './contracts/s3-stub.js';
import { EICAR, filesBelow, PNG, storageDirectory, uploadForm } from './storage-helpers.js';

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
  let s3: S3Stub;
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
        IDT_S3_REGION: S3_STUB_ACCOUNT.region,
        IDT_S3_BUCKET: S3_STUB_ACCOUNT.bucket,
        IDT_S3_ACCESS_KEY_ID: S3_STUB_ACCOUNT.accessKeyId,
        IDT_S3_SECRET_ACCESS_KEY: S3_STUB_ACCOUNT.secretAccessKey,
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
      ...S3_STUB_ACCOUNT,
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
      ...S3_STUB_ACCOUNT,
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
