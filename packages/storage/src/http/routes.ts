import { Readable } from 'node:stream';
import { defineRoute, json, noContent, type Principal, type Route } from '@idt/core';
import { UnauthorizedError } from '@idt/problem';
import { z } from 'zod';
import { contentDisposition } from '../files/sanitize.js';
import { FileMetadata, FilePage, ListFilesQuery, UploadForm, UploadResponse } from '../files/schemas.js';
import { formatByteCount, type StorageService } from '../files/service.js';
import { readMultipartUpload } from './multipart.js';

const TAGS = ['Storage'];
const IdParams = z.object({ id: z.string().min(1).max(100).describe('The file id (a GUID).') });
const notFound = { description: 'No such file in your organization (`Storage.FileNotFound`)' } as const;

function caller(principal: Principal | null): Principal {
  if (!principal) throw new UnauthorizedError('A valid credential is required.', { 'www-authenticate': 'Bearer' });
  return principal;
}

/**
 * The routes of `/v1/storage` (SPEC 4.9), tenant-owned. The upload route
 * reads its multipart body itself (`bodyKind: 'raw'`), streaming the file to
 * the blob store.
 *
 * @example
 * routes.push(...createStorageRoutes(storage));
 */
export function createStorageRoutes(storage: StorageService): Route[] {
  return [
    defineRoute({
      method: 'POST',
      path: '/v1/storage/upload',
      operationId: 'uploadFile',
      summary: 'Upload a file',
      description: [
        `A \`multipart/form-data\` body of at most ${formatByteCount(storage.maxUploadBytes)} bytes, streamed to the blob store: \`file\` (required, not empty), \`bucket\` (created on first upload), \`path\` (optional folder) and \`isPublic\` (default false).`,
        'The file name and path are sanitized and the content type is sniffed from the bytes, not taken from the client. A caller without a user (a service account) gets 401. With virus scanning on, an infected file is a 400 keyed `file`.',
      ].join(' '),
      tags: TAGS,
      permissions: ['StorageWrite'],
      ratePolicy: 'upload',
      request: { body: UploadForm, bodyKind: 'raw', rawContentType: 'multipart/form-data', maxBodyBytes: storage.maxUploadBytes },
      problemCodes: ['Storage.FileTooLarge', 'Storage.ScanUnavailable'],
      responses: {
        201: {
          description: 'The file was stored',
          schema: UploadResponse,
          headers: { Location: '`/v1/storage/files/{fileId}`' },
        },
        413: { description: 'The upload is larger than the limit (`Storage.FileTooLarge`); nothing was stored' },
        415: { description: 'Not a multipart/form-data body (`Http.ClientError`)' },
        503: { description: 'Virus scanning is on and the scanner could not check the file (`Storage.ScanUnavailable`)' },
      },
      handler: async ({ prefix, principal, request }) => {
        const actor = caller(principal);
        storage.authorizeUpload(actor);
        const upload = await readMultipartUpload(request, {
          maxBytes: storage.maxUploadBytes,
          stage: (content, info) => storage.stage(content, info),
        });
        const uploaded = await storage.complete(actor, upload.staged, upload.fields);
        return json(uploaded, { status: 201, headers: { location: `${prefix}/v1/storage/files/${uploaded.fileId}` } });
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/storage/files',
      operationId: 'listFiles',
      summary: 'A page of the files in a bucket, newest first',
      description: 'With `path`, only the files in that folder or below it. `pageSize` above 100 is clamped to 100.',
      tags: TAGS,
      permissions: ['StorageRead'],
      request: { query: ListFilesQuery },
      responses: { 200: { description: 'The files', schema: FilePage } },
      handler: async ({ principal, query }) => json(await storage.list(caller(principal), query)),
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/storage/files/{id}',
      operationId: 'getFile',
      summary: 'The metadata of a file',
      tags: TAGS,
      permissions: ['StorageRead'],
      request: { params: IdParams },
      problemCodes: ['Storage.FileNotFound'],
      responses: { 200: { description: 'The file', schema: FileMetadata }, 404: notFound },
      handler: async ({ principal, params }) => json(await storage.get(caller(principal), params.id)),
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/storage/files/{id}/download',
      operationId: 'downloadFile',
      summary: 'Download a file',
      description: 'Streams the bytes with the stored (sniffed) content type, as an attachment.',
      tags: TAGS,
      permissions: ['StorageRead'],
      request: { params: IdParams },
      problemCodes: ['Storage.FileNotFound'],
      responses: {
        200: {
          description: 'The file’s bytes',
          contentType: 'application/octet-stream',
          schema: z.string().meta({ format: 'binary' }),
          headers: {
            'Content-Type': 'The sniffed content type',
            'Content-Length': 'The size in bytes',
            'Content-Disposition': '`attachment` with the sanitized file name (`filename` and RFC 8187 `filename*`)',
          },
        },
        404: notFound,
      },
      handler: async ({ principal, params, signal, method }) => {
        const download = await storage.download(caller(principal), params.id);
        // HEAD (routed to GET) sends no body: close the blob stream rather than leave it open.
        if (method === 'HEAD') download.body.destroy();
        else signal.addEventListener('abort', () => download.body.destroy(), { once: true });
        const body = method === 'HEAD' ? null : (Readable.toWeb(download.body) as ReadableStream<Uint8Array>);
        return new Response(body, {
          status: 200,
          headers: {
            'content-type': download.file.contentType,
            'content-length': String(download.sizeBytes),
            'content-disposition': contentDisposition(download.file.fileName),
            'cache-control': 'private, no-store',
            'content-security-policy': "default-src 'none'; sandbox",
          },
        });
      },
    }),
    defineRoute({
      method: 'DELETE',
      path: '/v1/storage/files/{id}',
      operationId: 'deleteFile',
      summary: 'Delete a file',
      tags: TAGS,
      permissions: ['StorageWrite'],
      request: { params: IdParams },
      problemCodes: ['Storage.FileNotFound'],
      responses: { 204: { description: 'The file was deleted' }, 404: notFound },
      handler: async ({ principal, params }) => {
        await storage.remove(caller(principal), params.id);
        return noContent();
      },
    }),
  ];
}
