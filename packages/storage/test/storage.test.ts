import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { newId } from '@idt/core';
import {
  bootstrapAdmin,
  caller,
  createTestIdt,
  discover,
  expectJson,
  expectProblem,
  mintAccessToken,
  mintServiceToken,
  registerClient,
  seedWorld,
  type TestIdt,
  testDialects,
} from '@idt/testing';
import * as oidcClient from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { filesBelow, PNG, sendMultipart, storageDirectory, uploadForm } from './storage-helpers.js';

const UPLOAD_KEYS = ['contentType', 'fileId', 'fileName', 'sizeBytes', 'uploadedAt'];
const METADATA_KEYS = ['bucket', 'contentType', 'fileName', 'id', 'isPublic', 'path', 'sizeBytes', 'uploadedAt', 'uploadedBy'];

describe.each(testDialects())('storage over HTTP on %s', (dialect) => {
  let server: TestIdt;
  let call: ReturnType<typeof caller>;
  let world: Awaited<ReturnType<typeof seedWorld>>;

  beforeAll(async () => {
    server = await createTestIdt({ dialect });
    call = caller(server);
    world = await seedWorld(server);
  });
  afterAll(async () => {
    await server.close();
  });

  const objects = () => filesBelow(join(storageDirectory(server), 'objects'));
  const staging = () => filesBelow(join(storageDirectory(server), '.staging'));

  async function upload(
    content: Uint8Array | string,
    fileName: string,
    fields: Record<string, string> = { bucket: 'documents' },
  ) {
    return expectJson(await uploadForm(server, world.a.tokens.user, { content, fileName }, fields), 201);
  }

  describe('POST /v1/storage/upload', () => {
    it('answers 201 with Location and the upload response; the bytes land in the blob store under a generated key', async () => {
      const response = await uploadForm(
        server,
        world.a.tokens.user,
        { content: PNG, fileName: 'pixel.txt', type: 'text/html' },
        { bucket: 'images', path: 'avatars/2024', isPublic: 'true' },
      );
      const body = await expectJson(response, 201);
      expect(Object.keys(body).sort()).toEqual(UPLOAD_KEYS);
      expect(body).toEqual({
        fileId: expect.stringMatching(/^[0-9a-f-]{36}$/),
        fileName: 'pixel.txt',
        sizeBytes: PNG.length,
        contentType: 'image/png',
        uploadedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      });
      expect(response.headers.get('location')).toBe(`/v1/storage/files/${body.fileId}`);
      const key = `${world.a.organization.id}/${body.fileId}`;
      expect(objects()).toContain(key);
      expect(readFileSync(join(storageDirectory(server), 'objects', key))).toEqual(PNG);
      expect(staging()).toEqual([]);

      const metadata = await expectJson(await call('GET', `/v1/storage/files/${body.fileId}`, { token: world.a.tokens.user }));
      expect(Object.keys(metadata).sort()).toEqual(METADATA_KEYS);
      expect(metadata).toEqual({
        id: body.fileId,
        bucket: 'images',
        fileName: 'pixel.txt',
        contentType: 'image/png',
        sizeBytes: PNG.length,
        path: 'avatars/2024',
        isPublic: true,
        uploadedBy: world.a.user.id,
        uploadedAt: body.uploadedAt,
      });
      const bucket = await server.database
        .db('storage_buckets')
        .where({ organization_id: world.a.organization.id, name: 'images' });
      expect(bucket).toHaveLength(1);
    });

    it('streams the download back with the sniffed type, its length and a safe Content-Disposition', async () => {
      const uploaded = await upload(PNG, 'Résumé "final".png');
      const response = await call('GET', `/v1/storage/files/${uploaded.fileId}/download`, { token: world.a.tokens.user });
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('image/png');
      expect(response.headers.get('content-length')).toBe(String(PNG.length));
      expect(response.headers.get('content-disposition')).toBe(
        `attachment; filename="Resume _final_.png"; filename*=UTF-8''R%C3%A9sum%C3%A9%20_final_.png`,
      );
      expect(response.headers.get('x-content-type-options')).toBe('nosniff');
      expect(Buffer.from(await response.arrayBuffer())).toEqual(PNG);
      const head = await server.fetch(`/v1/storage/files/${uploaded.fileId}/download`, {
        method: 'HEAD',
        headers: { authorization: `Bearer ${world.a.tokens.user}` },
      });
      expect(head.status).toBe(200);
      expect(head.headers.get('content-length')).toBe(String(PNG.length));
      expect(await head.text()).toBe('');
    });

    it('sniffs the content type instead of trusting the client', async () => {
      const cases: Array<[string | Uint8Array, string, string | undefined, string]> = [
        ['name,total\nAda,3\n', 'report.csv', 'text/csv', 'text/csv; charset=utf-8'],
        ['{"a":1}', 'data.json', 'application/octet-stream', 'application/json'],
        ['<html><script>alert(1)</script></html>', 'page.html', 'text/html', 'text/plain; charset=utf-8'],
        ['<svg xmlns="http://www.w3.org/2000/svg"/>', 'logo.svg', 'image/svg+xml', 'text/plain; charset=utf-8'],
        ['%PDF-1.7\n%\u00e2\u00e3\n', 'doc.bin', 'application/octet-stream', 'application/pdf'],
        [Buffer.from([0, 1, 2, 3, 255, 254, 0, 0]), 'blob.png', 'image/png', 'application/octet-stream'],
        [Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 16]), 'photo', undefined, 'image/jpeg'],
      ];
      for (const [content, fileName, type, expected] of cases) {
        const body = await expectJson(
          await uploadForm(server, world.a.tokens.user, { content, fileName, ...(type ? { type } : {}) }, { bucket: 'sniff' }),
          201,
        );
        expect([fileName, body.contentType]).toEqual([fileName, expected]);
      }
    });

    it('sanitizes file names and paths: no traversal, no control characters, no backslashes', async () => {
      const response = await sendMultipart(server, world.a.tokens.user, [
        { name: 'bucket', value: 'docs' },
        { name: 'path', value: '../../etc//./x\\..\\y\u0007z/..' },
        // Header values cannot carry C0 controls (busboy refuses them); C1 and format characters can.
        { name: 'file', fileName: '..\\..\\windows\\sys\u202e\u0085tem\u200b.ini', content: Buffer.from('[boot]\n') },
      ]);
      const body = await expectJson(response, 201);
      expect(body.fileName).toBe('system.ini');
      const metadata = await expectJson(await call('GET', `/v1/storage/files/${body.fileId}`, { token: world.a.tokens.user }));
      expect(metadata.path).toBe('etc/x/yz');
      const names = await Promise.all(
        ['../../../passwd', '.htaccess', '\u200b\u2066', 'a<b>c:d|e?f*g.txt', `${'n'.repeat(300)}.txt`].map(async (name) => {
          const stored = await expectJson(
            await sendMultipart(server, world.a.tokens.user, [
              { name: 'bucket', value: 'docs' },
              { name: 'file', fileName: name, content: Buffer.from('x') },
            ]),
            201,
          );
          return stored.fileName;
        }),
      );
      expect(names.slice(0, 4)).toEqual(['passwd', 'htaccess', 'file', 'a_b_c_d_e_f_g.txt']);
      expect(names[4]).toBe(`${'n'.repeat(251)}.txt`);
      // Whatever the names, every blob sits at objects/<organization>/<file id>.
      for (const key of objects()) expect(key).toMatch(/^[0-9a-f-]{36}\/[0-9a-f-]{36}$/);
    });

    it('answers 400 keyed on file for an empty or missing file, and leaves nothing behind', async () => {
      const before = objects();
      const count = async () => Number((await server.database.db('storage_files').count({ n: '*' }))[0]?.n);
      const rows = await count();
      const empty = await expectProblem(
        await uploadForm(server, world.a.tokens.user, { content: new Uint8Array(0), fileName: 'empty.txt' }),
        400,
        'Validation.Failed',
      );
      expect(empty.errors).toEqual({ file: ['The file is empty.'] });
      const missing = await expectProblem(
        await uploadForm(server, world.a.tokens.user, undefined, { bucket: 'documents' }),
        400,
        'Validation.Failed',
      );
      expect(Object.keys(missing.errors)).toEqual(['file']);
      const both = await expectProblem(
        await uploadForm(server, world.a.tokens.user, { content: new Uint8Array(0), fileName: 'e' }, {}),
        400,
        'Validation.Failed',
      );
      expect(Object.keys(both.errors).sort()).toEqual(['bucket', 'file']);
      const badFields = await expectProblem(
        await uploadForm(
          server,
          world.a.tokens.user,
          { content: 'x', fileName: 'x.txt' },
          { bucket: '../etc', isPublic: 'maybe' },
        ),
        400,
        'Validation.Failed',
      );
      expect(Object.keys(badFields.errors).sort()).toEqual(['bucket', 'isPublic']);
      const twoFiles = await sendMultipart(server, world.a.tokens.user, [
        { name: 'bucket', value: 'documents' },
        { name: 'file', fileName: 'a.txt', content: Buffer.from('a') },
        { name: 'file', fileName: 'b.txt', content: Buffer.from('b') },
      ]);
      expect(Object.keys((await expectProblem(twoFiles, 400, 'Validation.Failed')).errors)).toEqual(['file']);
      const notMultipart = await call('POST', '/v1/storage/upload', { token: world.a.tokens.user, body: { bucket: 'x' } });
      expect(notMultipart.status).toBe(415);
      expect(objects()).toEqual(before);
      expect(staging()).toEqual([]);
      expect(await count()).toBe(rows);
    });

    it('accepts fields before or after the file, and isPublic in the usual spellings', async () => {
      const after = await expectJson(
        await sendMultipart(server, world.a.tokens.user, [
          { name: 'file', fileName: 'late.txt', content: Buffer.from('fields come later') },
          { name: 'bucket', value: 'late' },
          { name: 'isPublic', value: 'TRUE' },
          { name: 'unknown', value: 'ignored' },
        ]),
        201,
      );
      const metadata = await expectJson(await call('GET', `/v1/storage/files/${after.fileId}`, { token: world.a.tokens.user }));
      expect(metadata).toMatchObject({ bucket: 'late', isPublic: true, path: null });
      const implicit = await upload('x', 'x.txt', { bucket: 'late' });
      expect(
        (await expectJson(await call('GET', `/v1/storage/files/${implicit.fileId}`, { token: world.a.tokens.user }))).isPublic,
      ).toBe(false);
    });

    it('needs a user with StorageWrite in an organization: 401 for service accounts', async () => {
      const file = { content: 'x', fileName: 'x.txt' };
      await expectProblem(await uploadForm(server, undefined, file), 401, 'Auth.Unauthenticated');
      await expectProblem(await uploadForm(server, world.a.tokens.manager, file), 403, 'Auth.Forbidden');
      await expectProblem(await uploadForm(server, world.outsiderToken, file), 403, 'Tenant.Required');
      const service = await mintServiceToken(server, {
        clientId: 'sa-alpha-files',
        organizationId: world.a.organization.id,
        scope: 'storage.read storage.write',
      });
      await expectProblem(await uploadForm(server, service, file), 401, 'Auth.Unauthenticated');
      const readOnly = await mintServiceToken(server, {
        clientId: 'sa-alpha-reader',
        organizationId: world.a.organization.id,
        scope: 'storage.read',
      });
      await expectProblem(await uploadForm(server, readOnly, file), 403, 'Auth.Forbidden');
      expect(staging()).toEqual([]);
    });

    it('cleans up when the client goes away mid-upload, and refuses malformed bodies', async () => {
      const before = objects();
      const controller = new AbortController();
      const sent = { bytes: 0, staged: -1 };
      async function* slow(): AsyncGenerator<Uint8Array> {
        const chunk = Buffer.alloc(64 * 1024, 7);
        for (let i = 0; i < 1000; i++) {
          sent.bytes += chunk.length;
          if (i === 20) {
            // Real I/O: give the server time to stage what it got over the socket, then hang up.
            await new Promise((resolve) => setTimeout(resolve, 100));
            sent.staged = staging().length;
            controller.abort();
          }
          yield chunk;
        }
      }
      const aborted = sendMultipart(
        server,
        world.a.tokens.user,
        [
          { name: 'bucket', value: 'aborted' },
          { name: 'file', fileName: 'partial.bin', content: slow },
        ],
        {},
        controller.signal,
      );
      await expect(aborted).rejects.toThrow();
      expect(sent.staged).toBe(1);
      // Real I/O: polls until the server has noticed the hang-up and deleted its staged file.
      for (let i = 0; i < 50 && staging().length > 0; i++) await new Promise((resolve) => setTimeout(resolve, 50));
      expect(staging()).toEqual([]);
      expect(objects()).toEqual(before);
      expect(await server.database.db('storage_buckets').where({ name: 'aborted' })).toEqual([]);

      const noBoundary = await server.fetch('/v1/storage/upload', {
        method: 'POST',
        headers: { authorization: `Bearer ${world.a.tokens.user}`, 'content-type': 'multipart/form-data' },
        body: 'x',
      });
      await expectProblem(noBoundary, 400, 'Http.ClientError');
      const notForm = await server.fetch('/v1/storage/upload', {
        method: 'POST',
        headers: { authorization: `Bearer ${world.a.tokens.user}`, 'content-type': 'application/octet-stream' },
        body: 'x',
      });
      await expectProblem(notForm, 415, 'Http.ClientError');
      const truncated = await server.fetch('/v1/storage/upload', {
        method: 'POST',
        headers: { authorization: `Bearer ${world.a.tokens.user}`, 'content-type': 'multipart/form-data; boundary=abc' },
        body: '--abc\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n\r\nhalf a file',
      });
      await expectProblem(truncated, 400, 'Http.ClientError');
      expect(staging()).toEqual([]);
      expect(objects()).toEqual(before);
    });

    it('stores ten concurrent uploads intact', async () => {
      const contents = Array.from({ length: 10 }, (_, i) => Buffer.alloc(200_000 + i * 1000, String.fromCharCode(97 + i)));
      const responses = await Promise.all(
        contents.map((content, i) =>
          uploadForm(server, world.a.tokens.user, { content, fileName: `part-${i}.txt` }, { bucket: 'concurrent' }),
        ),
      );
      const uploaded = await Promise.all(responses.map((response) => expectJson(response, 201)));
      expect(new Set(uploaded.map((entry) => entry.fileId)).size).toBe(10);
      for (const [i, entry] of uploaded.entries()) {
        expect(entry).toMatchObject({ fileName: `part-${i}.txt`, sizeBytes: contents[i]?.length });
        const download = await call('GET', `/v1/storage/files/${entry.fileId}/download`, { token: world.a.tokens.user });
        expect(Buffer.from(await download.arrayBuffer()).equals(contents[i] as Buffer)).toBe(true);
      }
      const listed = await expectJson(await call('GET', '/v1/storage/files?bucket=concurrent', { token: world.a.tokens.user }));
      expect(listed.totalCount).toBe(10);
      expect(
        await server.database.db('storage_buckets').where({ organization_id: world.a.organization.id, name: 'concurrent' }),
      ).toHaveLength(1);
      expect(staging()).toEqual([]);
    });
  });

  describe('GET /v1/storage/files', () => {
    beforeAll(async () => {
      for (const [i, path] of ['', 'reports', 'reports/2024', 'reports/2024/q1', 'reports-old', 'other'].entries()) {
        await upload(`file ${i}`, `f${i}.txt`, { bucket: 'listing', ...(path ? { path } : {}) });
      }
    });

    it('pages a bucket newest first with the paged result of SPEC 2.6', async () => {
      const first = await expectJson(
        await call('GET', '/v1/storage/files?bucket=listing&pageSize=4', { token: world.a.tokens.user }),
      );
      expect(first).toMatchObject({
        totalCount: 6,
        page: 1,
        pageSize: 4,
        totalPages: 2,
        hasNextPage: true,
        hasPreviousPage: false,
      });
      expect(first.items.map((item: { fileName: string }) => item.fileName)).toEqual(['f5.txt', 'f4.txt', 'f3.txt', 'f2.txt']);
      expect(Object.keys(first.items[0]).sort()).toEqual(METADATA_KEYS);
      const second = await expectJson(
        await call('GET', '/v1/storage/files?bucket=listing&pageSize=4&page=2', { token: world.a.tokens.user }),
      );
      expect(second).toMatchObject({ page: 2, hasNextPage: false, hasPreviousPage: true });
      expect(second.items.map((item: { fileName: string }) => item.fileName)).toEqual(['f1.txt', 'f0.txt']);
      const defaults = await expectJson(await call('GET', '/v1/storage/files?bucket=listing', { token: world.a.tokens.user }));
      expect(defaults).toMatchObject({ page: 1, pageSize: 20, totalPages: 1 });
      const clamped = await expectJson(
        await call('GET', '/v1/storage/files?bucket=listing&pageSize=500', { token: world.a.tokens.user }),
      );
      expect(clamped.pageSize).toBe(100);
      const empty = await expectJson(await call('GET', '/v1/storage/files?bucket=nothing-here', { token: world.a.tokens.user }));
      expect(empty).toEqual({
        items: [],
        totalCount: 0,
        page: 1,
        pageSize: 20,
        totalPages: 0,
        hasNextPage: false,
        hasPreviousPage: false,
      });
    });

    it('filters by folder, sub-folders included, with the path sanitized like uploads', async () => {
      const names = async (path: string) =>
        (
          await expectJson(
            await call('GET', `/v1/storage/files?bucket=listing&path=${encodeURIComponent(path)}`, {
              token: world.a.tokens.user,
            }),
          )
        ).items
          .map((item: { fileName: string }) => item.fileName)
          .sort();
      expect(await names('reports')).toEqual(['f1.txt', 'f2.txt', 'f3.txt']);
      expect(await names('/reports/2024/')).toEqual(['f2.txt', 'f3.txt']);
      expect(await names('../reports/./2024/q1')).toEqual(['f3.txt']);
      expect(await names('REPORTS')).toEqual([]);
      expect(await names('')).toHaveLength(6);
    });

    it('needs bucket, valid paging and StorageRead', async () => {
      const missing = await expectProblem(
        await call('GET', '/v1/storage/files', { token: world.a.tokens.user }),
        400,
        'Validation.Failed',
      );
      expect(Object.keys(missing.errors)).toEqual(['bucket']);
      const paging = await expectProblem(
        await call('GET', '/v1/storage/files?bucket=listing&page=0&pageSize=x', { token: world.a.tokens.user }),
        400,
        'Validation.Failed',
      );
      expect(Object.keys(paging.errors).sort()).toEqual(['page', 'pageSize']);
      await expectProblem(await call('GET', '/v1/storage/files?bucket=listing'), 401, 'Auth.Unauthenticated');
      await expectProblem(
        await call('GET', '/v1/storage/files?bucket=listing', { token: world.a.tokens.manager }),
        403,
        'Auth.Forbidden',
      );
    });
  });

  describe('reading and deleting files', () => {
    it('deletes a file: 204, then 404 everywhere, and its blob is gone', async () => {
      const uploaded = await upload('to be deleted', 'gone.txt');
      const key = `${world.a.organization.id}/${uploaded.fileId}`;
      expect(objects()).toContain(key);
      await expectProblem(
        await call('DELETE', `/v1/storage/files/${uploaded.fileId}`, { token: world.a.tokens.manager }),
        403,
        'Auth.Forbidden',
      );
      const deleted = await call('DELETE', `/v1/storage/files/${uploaded.fileId}`, { token: world.a.tokens.user });
      expect(deleted.status).toBe(204);
      expect(objects()).not.toContain(key);
      for (const path of [`/v1/storage/files/${uploaded.fileId}`, `/v1/storage/files/${uploaded.fileId}/download`]) {
        await expectProblem(await call('GET', path, { token: world.a.tokens.user }), 404, 'Storage.FileNotFound');
      }
      await expectProblem(
        await call('DELETE', `/v1/storage/files/${uploaded.fileId}`, { token: world.a.tokens.user }),
        404,
        'Storage.FileNotFound',
      );
      await expectProblem(
        await call('GET', '/v1/storage/files/not-an-id', { token: world.a.tokens.user }),
        404,
        'Storage.FileNotFound',
      );
    });

    it('keeps organizations apart: B can neither see, download, list nor delete A’s files', async () => {
      const uploaded = await upload('alpha secret', 'alpha.txt', { bucket: 'shared-name' });
      const b = world.b.tokens.admin;
      for (const [method, path] of [
        ['GET', `/v1/storage/files/${uploaded.fileId}`],
        ['GET', `/v1/storage/files/${uploaded.fileId}/download`],
        ['DELETE', `/v1/storage/files/${uploaded.fileId}`],
      ] as const) {
        await expectProblem(await call(method, path, { token: b }), 404, 'Storage.FileNotFound');
      }
      const listed = await expectJson(await call('GET', '/v1/storage/files?bucket=shared-name', { token: b }));
      expect(listed.totalCount).toBe(0);
      // B's bucket of the same name is B's own.
      const own = await expectJson(
        await uploadForm(server, world.b.tokens.user, { content: 'beta', fileName: 'beta.txt' }, { bucket: 'shared-name' }),
        201,
      );
      const listedB = await expectJson(await call('GET', '/v1/storage/files?bucket=shared-name', { token: b }));
      expect(listedB.items.map((item: { id: string }) => item.id)).toEqual([own.fileId]);
      const listedA = await expectJson(await call('GET', '/v1/storage/files?bucket=shared-name', { token: world.a.tokens.user }));
      expect(listedA.items.map((item: { id: string }) => item.id)).toEqual([uploaded.fileId]);
      const download = await call('GET', `/v1/storage/files/${uploaded.fileId}/download`, { token: world.a.tokens.user });
      expect(await download.text()).toBe('alpha secret');
      await expectProblem(
        await call('GET', `/v1/storage/files/${newId()}`, { token: world.a.tokens.user }),
        404,
        'Storage.FileNotFound',
      );
    });
  });

  it('documents every storage route, with the multipart body, in /openapi/v1.json', async () => {
    const document = (await (await server.fetch('/openapi/v1.json')).json()) as Record<string, any>;
    const operations = Object.entries(document.paths as Record<string, Record<string, { operationId: string }>>).flatMap(
      ([path, methods]) =>
        Object.entries(methods).map(([method, operation]) => `${method.toUpperCase()} ${path} ${operation.operationId}`),
    );
    expect(operations.filter((line) => line.includes('/v1/storage')).sort()).toEqual([
      'DELETE /v1/storage/files/{id} deleteFile',
      'GET /v1/storage/files listFiles',
      'GET /v1/storage/files/{id} getFile',
      'GET /v1/storage/files/{id}/download downloadFile',
      'POST /v1/storage/upload uploadFile',
    ]);
    const upload = document.paths['/v1/storage/upload'].post;
    expect(upload.requestBody.required).toBe(true);
    const schema = upload.requestBody.content['multipart/form-data'].schema;
    expect(schema.properties).toMatchObject({
      file: { type: 'string', format: 'binary' },
      bucket: { type: 'string' },
      path: { type: 'string' },
      isPublic: { type: 'boolean', default: false },
    });
    expect(schema.required.sort()).toEqual(['bucket', 'file']);
    expect(upload.responses['201'].headers).toHaveProperty('Location');
    expect(upload.responses).toHaveProperty('413');
    expect(upload.description).toContain('Rate-limit policy: `upload`');
    expect(document.paths['/v1/storage/files/{id}/download'].get.responses['200'].content).toHaveProperty(
      'application/octet-stream',
    );
    expect(document.paths['/v1/storage/files'].get.parameters.map((p: { name: string }) => p.name)).toEqual([
      'bucket',
      'path',
      'page',
      'pageSize',
    ]);
    expect(document.components.schemas.ErrorCode.enum).toContain('Storage.FileTooLarge');
  });
});

describe.each(testDialects())('storage with a real client-credentials token on %s', (dialect) => {
  let server: TestIdt;

  beforeAll(async () => {
    server = await createTestIdt({ dialect });
  });
  afterAll(async () => {
    await server.close();
  });

  it('lets a service account list, read, download and delete, and refuses its uploads with 401', async () => {
    const admin = await bootstrapAdmin(server);
    const intake = await registerClient(server, await admin.token(), admin.organizationId, {
      kind: 'service-account',
      name: 'Intake',
      scopes: ['inquiries.write', 'storage.write', 'storage.read'],
    });
    const tokens = await oidcClient.clientCredentialsGrant(await discover(server, intake), {
      scope: 'storage.read storage.write',
    });
    const service = tokens.access_token;
    await expectProblem(await uploadForm(server, service, { content: 'x', fileName: 'x.txt' }), 401, 'Auth.Unauthenticated');

    const adminToken = await mintAccessToken(server, { sub: admin.userId, org_id: admin.organizationId });
    const uploaded = await expectJson(
      await uploadForm(server, adminToken, { content: 'quarterly numbers', fileName: 'q1.txt' }, { bucket: 'reports' }),
      201,
    );
    const call = caller(server);
    const listed = await expectJson(await call('GET', '/v1/storage/files?bucket=reports', { token: service }));
    expect(listed.items).toEqual([
      expect.objectContaining({ id: uploaded.fileId, uploadedBy: admin.userId, fileName: 'q1.txt' }),
    ]);
    const download = await call('GET', `/v1/storage/files/${uploaded.fileId}/download`, { token: service });
    expect(await download.text()).toBe('quarterly numbers');
    expect((await call('DELETE', `/v1/storage/files/${uploaded.fileId}`, { token: service })).status).toBe(204);
    await expectProblem(
      await call('GET', `/v1/storage/files/${uploaded.fileId}`, { token: service }),
      404,
      'Storage.FileNotFound',
    );
  });
});
