import { request } from 'node:http';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { caller, expectJson, expectProblem, seedWorld, startTestServer, type TestServer, testDialects } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { filesBelow, pattern, sendMultipart, sha256Of, storageDirectory, uploadForm } from './storage-helpers.js';

const MB = 1024 * 1024;
const LIMIT = 104_857_600;

/**
 * A full garbage collection. Node hides `gc` unless started with
 * `--expose-gc`; the flag can be turned on at run time for a new context.
 */
const collectGarbage: () => void = (() => {
  setFlagsFromString('--expose-gc');
  return runInNewContext('gc') as () => void;
})();

/**
 * Samples this process's RSS (the test server runs in it) while `work` runs.
 * Chunks already read are garbage the collector may leave around for a
 * while (V8 collects after about 64 MiB of new external memory), so the
 * sampler collects whenever more than 8 MiB of buffers piled up since the
 * last collection: the peak then shows memory in use, plus at most that
 * much garbage. A server that buffered the upload could not give it back.
 */
async function measureRss<T>(work: () => Promise<T>): Promise<{ result: T; before: number; peak: number; after: number }> {
  collectGarbage();
  const before = process.memoryUsage().rss;
  let collectedAt = process.memoryUsage().arrayBuffers;
  let peak = before;
  const timer = setInterval(() => {
    const usage = process.memoryUsage();
    if (usage.arrayBuffers - collectedAt > 8 * MB) {
      collectGarbage();
      collectedAt = process.memoryUsage().arrayBuffers;
    }
    peak = Math.max(peak, usage.rss);
  }, 10);
  try {
    const result = await work();
    collectGarbage();
    const after = process.memoryUsage().rss;
    return { result, before, peak: Math.max(peak, after), after };
  } finally {
    clearInterval(timer);
  }
}

function mb(bytes: number): string {
  return `${(bytes / MB).toFixed(1)} MiB`;
}

/** Sends only the headers of an upload that declares a body larger than the limit. */
function declareOversize(
  server: TestServer,
  token: string,
  length: number,
): Promise<{ status: number; body: string; connection?: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${server.url}/v1/storage/upload`,
      {
        method: 'POST',
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'multipart/form-data; boundary=x',
          'content-length': String(length),
        },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
        });
        res.on('end', () => {
          req.destroy();
          resolve({
            status: res.statusCode ?? 0,
            body,
            ...(res.headers.connection ? { connection: res.headers.connection } : {}),
          });
        });
      },
    );
    req.on('error', reject);
    req.flushHeaders();
  });
}

describe.each(testDialects())('upload limits with a small configured limit on %s', (dialect) => {
  let server: TestServer;
  let token: string;

  beforeAll(async () => {
    server = await startTestServer({ dialect, env: { IDT_STORAGE_MAX_UPLOAD_BYTES: '65536' } });
    const world = await seedWorld(server);
    token = world.a.tokens.user;
  });
  afterAll(async () => {
    await server.close();
  });

  const leftovers = () => ({
    staging: filesBelow(join(storageDirectory(server), '.staging')),
    objects: filesBelow(join(storageDirectory(server), 'objects')),
  });
  const rows = async () => Number((await server.database.db('storage_files').count({ n: '*' }))[0]?.n);

  it('accepts an upload within the limit', async () => {
    const body = await expectJson(
      await uploadForm(server, token, { content: Buffer.alloc(60_000, 1), fileName: 'fits.bin' }),
      201,
    );
    expect(body.sizeBytes).toBe(60_000);
  });

  it('refuses a declared Content-Length past the limit before reading the body', async () => {
    const before = leftovers();
    const response = await uploadForm(server, token, { content: Buffer.alloc(100_000, 1), fileName: 'big.bin' });
    const problem = await expectProblem(response, 413, 'Storage.FileTooLarge');
    expect(problem.title).toBe('Content Too Large');
    expect(problem.detail).toContain('65,536');
    const raw = await declareOversize(server, token, 10 * MB);
    expect(raw.status).toBe(413);
    expect(JSON.parse(raw.body)).toMatchObject({ code: 'Storage.FileTooLarge' });
    expect(raw.connection).toBe('close');
    expect(leftovers()).toEqual(before);
  });

  it('counts a streamed body and stops at the limit: 413 Storage.FileTooLarge, nothing left on disk or in the database', async () => {
    const before = leftovers();
    const count = await rows();
    for (const size of [65_537, 200_000, 5 * MB]) {
      const response = await sendMultipart(server, token, [
        { name: 'bucket', value: 'big' },
        { name: 'file', fileName: 'stream.bin', content: pattern(size, 16 * 1024) },
      ]);
      await expectProblem(response, 413, 'Storage.FileTooLarge');
      expect(response.headers.get('connection')).toBe('close');
      expect(leftovers()).toEqual(before);
    }
    expect(leftovers().staging).toEqual([]);
    expect(await rows()).toBe(count);
    // The server is still fine afterwards.
    expect((await uploadForm(server, token, { content: 'after', fileName: 'after.txt' }, { bucket: 'big' })).status).toBe(201);
  });

  it('refuses the upload rate policy once exhausted', async () => {
    const limited = await startTestServer({
      dialect,
      env: { IDT_RATE_LIMIT_UPLOAD_PERMIT_LIMIT: '2', IDT_RATE_LIMIT_UPLOAD_WINDOW_SECONDS: '3600' },
    });
    try {
      const world = await seedWorld(limited);
      const statuses: number[] = [];
      for (let i = 0; i < 3; i++) {
        const response = await uploadForm(limited, world.a.tokens.user, { content: `n${i}`, fileName: 'n.txt' });
        statuses.push(response.status);
        if (response.status === 429) {
          expect(response.headers.get('retry-after')).toMatch(/^\d+$/);
          expect(((await response.json()) as { code: string }).code).toBe('RateLimit.Exceeded');
        } else {
          await response.body?.cancel();
        }
      }
      expect(statuses).toEqual([201, 201, 429]);
      // Other routes use the global policy, not the upload one.
      expect((await caller(limited)('GET', '/v1/storage/files?bucket=documents', { token: world.a.tokens.user })).status).toBe(
        200,
      );
    } finally {
      await limited.close();
    }
  });
});

describe.each(testDialects())('100 MB uploads on %s', (dialect) => {
  let server: TestServer;
  let token: string;

  beforeAll(async () => {
    server = await startTestServer({ dialect });
    const world = await seedWorld(server);
    token = world.a.tokens.user;
    // Warm up the route, the parser and the database before measuring.
    await expectJson(
      await uploadForm(server, token, { content: Buffer.alloc(MB, 1), fileName: 'warm.bin' }, { bucket: 'warm' }),
      201,
    );
  });
  afterAll(async () => {
    await server.close();
  });

  it('streams a ~100 MB upload and its download with flat server memory', { timeout: 180_000 }, async () => {
    const size = 100_000_000;
    const expected = await sha256Of(pattern(size)());
    const upload = await measureRss(async () => {
      const response = await sendMultipart(server, token, [
        { name: 'bucket', value: 'large' },
        { name: 'path', value: 'videos' },
        { name: 'file', fileName: 'large.bin', content: pattern(size) },
      ]);
      return expectJson(response, 201);
    });
    expect(upload.result).toMatchObject({ sizeBytes: size, fileName: 'large.bin', contentType: 'application/octet-stream' });
    const download = await measureRss(async () => {
      const response = await server.fetch(`/v1/storage/files/${upload.result.fileId}/download`, {
        headers: { authorization: `Bearer ${token}` },
      });
      expect(response.status).toBe(200);
      expect(response.headers.get('content-length')).toBe(String(size));
      return sha256Of(Readable.fromWeb(response.body as never));
    });
    expect(download.result).toBe(expected);
    console.info(
      `[storage ${dialect}] 100 MB upload: RSS before ${mb(upload.before)}, peak ${mb(upload.peak)} (+${mb(upload.peak - upload.before)}), after ${mb(upload.after)}; ` +
        `download: before ${mb(download.before)}, peak ${mb(download.peak)} (+${mb(download.peak - download.before)})`,
    );
    expect(upload.peak - upload.before).toBeLessThan(50 * MB);
    expect(download.peak - download.before).toBeLessThan(50 * MB);
    expect(filesBelow(join(storageDirectory(server), '.staging'))).toEqual([]);
  });

  it('refuses a streamed upload past 104,857,600 bytes with 413 and leaves no file behind', { timeout: 180_000 }, async () => {
    const objects = filesBelow(join(storageDirectory(server), 'objects'));
    const count = Number((await server.database.db('storage_files').count({ n: '*' }))[0]?.n);
    const oversize = await measureRss(async () =>
      sendMultipart(server, token, [
        { name: 'bucket', value: 'large' },
        { name: 'file', fileName: 'too-large.bin', content: pattern(LIMIT + MB) },
      ]),
    );
    const problem = await expectProblem(oversize.result, 413, 'Storage.FileTooLarge');
    expect(problem.detail).toContain('104,857,600');
    expect(oversize.peak - oversize.before).toBeLessThan(50 * MB);
    expect(filesBelow(join(storageDirectory(server), '.staging'))).toEqual([]);
    expect(filesBelow(join(storageDirectory(server), 'objects'))).toEqual(objects);
    expect(Number((await server.database.db('storage_files').count({ n: '*' }))[0]?.n)).toBe(count);
    const declared = await declareOversize(server, token, LIMIT + 1);
    expect(declared.status).toBe(413);
  });
});
