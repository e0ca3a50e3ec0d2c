import { pipeline, type Readable, Transform, type TransformCallback } from 'node:stream';
import { type Clock, type Logger, newId, type Page, type Principal, silentLogger, systemClock, toPage } from '@idt/core';
import { fieldErrorsFromIssues, ProblemError, type ProblemFieldErrors, UnauthorizedError, ValidationProblem } from '@idt/problem';
import type { BlobStore, StagedBlob } from '../blob/store.js';
import type { Scanner } from '../scan/scanner.js';
import { DEFAULT_MAX_UPLOAD_BYTES } from '../settings.js';
import { sanitizeFileName } from './sanitize.js';
import { type FileMetadata, ListFilesQuery, UploadFields, type UploadResponse } from './schemas.js';
import { SNIFF_BYTES, sniffContentType } from './sniff.js';
import type { FilesStore, StoredFileRecord } from './store.js';

/** The permission to list, read and download files. */
export const STORAGE_READ = 'StorageRead';
/** The permission to upload and delete files. */
export const STORAGE_WRITE = 'StorageWrite';

/** Who calls the storage service: the parts of a request's principal it decides on. A `Principal` is one. */
export type StorageActor = Pick<Principal, 'kind' | 'userId' | 'organizationId' | 'permissions'>;

/** A file streamed to the blob store's staging area, sniffed and measured, waiting for its form fields. */
export interface StagedUpload {
  /** The sanitized client file name. */
  readonly fileName: string;
  /** Sniffed from the first bytes. */
  readonly contentType: string;
  readonly sizeBytes: number;
  readonly blob: StagedBlob;
}

/** What a client says about an uploaded file; hints only. */
export interface UploadFileInfo {
  readonly fileName?: string | undefined;
  readonly declaredType?: string | undefined;
}

/** A downloadable file: its metadata and its bytes. */
export interface FileDownload {
  readonly file: FileMetadata;
  readonly body: Readable;
  readonly sizeBytes: number;
}

/** Options of {@link createStorageService}. */
export interface StorageServiceOptions {
  readonly store: FilesStore;
  readonly blobs: BlobStore;
  /** Scans every upload before it is stored; none by default. */
  readonly scanner?: Scanner | undefined;
  /** The largest upload, in bytes (default 104,857,600). */
  readonly maxUploadBytes?: number;
  readonly clock?: Clock;
  readonly logger?: Logger;
}

/** Files of the caller's organization: upload, list, read, download, delete. */
export interface StorageService {
  /** The largest upload request accepted, in bytes. */
  readonly maxUploadBytes: number;
  /**
   * Checks, before any byte is read, that the actor may upload: an
   * organization, `StorageWrite`, and a user behind the call.
   *
   * @throws UnauthorizedError (401) for a caller without a user (a service account).
   */
  authorizeUpload(actor: StorageActor): void;
  /**
   * Streams file content to the blob store's staging area, counting bytes
   * (413 `Storage.FileTooLarge` past the limit, nothing left behind) and
   * sniffing the content type from the first bytes.
   */
  stage(content: Readable, info: UploadFileInfo): Promise<StagedUpload>;
  /**
   * Validates the form fields and the staged file (400 keyed `file` when it
   * is missing or empty), scans it, records it and commits its bytes. Any
   * failure discards the staged bytes.
   */
  complete(actor: StorageActor, staged: StagedUpload | undefined, fields: Record<string, unknown>): Promise<UploadResponse>;
  /** {@link stage} and {@link complete} in one call, for hosts that have the content and fields at hand. */
  upload(
    actor: StorageActor,
    input: UploadFileInfo & { content: Readable; bucket: string; path?: string | null; isPublic?: boolean },
  ): Promise<UploadResponse>;
  /** A page of a bucket's files (`StorageRead`). */
  list(actor: StorageActor, query: ListFilesQuery): Promise<Page<FileMetadata>>;
  /** One file's metadata (`StorageRead`). */
  get(actor: StorageActor, id: string): Promise<FileMetadata>;
  /** A file's metadata and bytes (`StorageRead`). */
  download(actor: StorageActor, id: string): Promise<FileDownload>;
  /** Deletes a file (`StorageWrite`). */
  remove(actor: StorageActor, id: string): Promise<void>;
}

/**
 * A whole number of bytes with a comma between thousands (`10,485,760`), as
 * `toLocaleString('en-US')` writes it, without loading ICU's number
 * formatting data (some 6 MiB of resident memory) at startup.
 */
export function formatByteCount(bytes: number): string {
  return String(Math.trunc(bytes)).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

/** The problem of an upload past the limit. */
export function fileTooLarge(maxBytes: number): ProblemError {
  return new ProblemError('Storage.FileTooLarge', `The upload is larger than the limit of ${formatByteCount(maxBytes)} bytes.`);
}

/** Counts the bytes passing through, fails past the limit, and keeps the first bytes for sniffing. */
class UploadMeter extends Transform {
  bytes = 0;
  readonly #head: Buffer[] = [];
  #headBytes = 0;
  constructor(private readonly maxBytes: number) {
    super();
  }
  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.bytes += chunk.length;
    if (this.bytes > this.maxBytes) {
      callback(fileTooLarge(this.maxBytes));
      return;
    }
    if (this.#headBytes < SNIFF_BYTES) {
      const part = chunk.subarray(0, SNIFF_BYTES - this.#headBytes);
      this.#head.push(Buffer.from(part));
      this.#headBytes += part.length;
    }
    callback(null, chunk);
  }
  head(): Buffer {
    return Buffer.concat(this.#head);
  }
}

function toMetadata(record: StoredFileRecord): FileMetadata {
  return {
    id: record.id,
    bucket: record.bucket,
    fileName: record.fileName,
    contentType: record.contentType,
    sizeBytes: record.sizeBytes,
    path: record.path,
    isPublic: record.isPublic,
    uploadedBy: record.uploadedBy,
    uploadedAt: record.uploadedAt,
  };
}

function tenantOf(actor: StorageActor, permission: string): string {
  if (actor.organizationId === null) throw new ProblemError('Tenant.Required');
  if (!actor.permissions.has(permission)) {
    throw new ProblemError('Auth.Forbidden', `This operation needs the ${permission} permission.`);
  }
  return actor.organizationId;
}

function notFound(): ProblemError {
  return new ProblemError('Storage.FileNotFound', 'No such file.');
}

const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * Creates the storage service. Files belong to the caller's organization;
 * another organization's file answers 404 `Storage.FileNotFound`. Blobs are
 * stored under generated keys (`<organizationId>/<fileId>`): client names
 * and paths are sanitized metadata and never reach the blob store.
 *
 * @example
 * const storage = createStorageService({ store: createKnexFilesStore(db), blobs: createFileSystemBlobStore({ directory }) });
 * const uploaded = await storage.upload(principal, { content: createReadStream('a.pdf'), fileName: 'a.pdf', bucket: 'docs' });
 */
export function createStorageService(options: StorageServiceOptions): StorageService {
  const { store, blobs, scanner } = options;
  const clock = options.clock ?? systemClock;
  const logger = (options.logger ?? silentLogger).child({ component: 'storage' });
  const maxUploadBytes = options.maxUploadBytes ?? DEFAULT_MAX_UPLOAD_BYTES;
  if (!Number.isInteger(maxUploadBytes) || maxUploadBytes < 1) {
    throw new RangeError(`createStorageService: maxUploadBytes must be a positive integer, got ${maxUploadBytes}`);
  }

  async function visible(actor: StorageActor, id: string, permission: string): Promise<StoredFileRecord> {
    const organizationId = tenantOf(actor, permission);
    const key = id.trim().toLowerCase();
    const record = GUID.test(key) ? await store.find(organizationId, key) : undefined;
    if (!record) throw notFound();
    return record;
  }

  function authorizeUpload(actor: StorageActor): void {
    tenantOf(actor, STORAGE_WRITE);
    if (actor.userId === null) {
      throw new UnauthorizedError('Uploads need a signed-in user; service accounts cannot upload.', {
        'www-authenticate': 'Bearer',
      });
    }
  }

  async function stage(content: Readable, info: UploadFileInfo): Promise<StagedUpload> {
    const fileName = sanitizeFileName(info.fileName);
    const meter = new UploadMeter(maxUploadBytes);
    // Errors of the content travel into the meter (and from there into the blob store's pipeline);
    // a meter failure (too large) destroys the content stream.
    pipeline(content, meter, () => undefined);
    const blob = await blobs.stage(meter);
    return {
      fileName,
      contentType: sniffContentType(meter.head(), {
        fileName,
        ...(info.declaredType ? { declaredType: info.declaredType } : {}),
      }),
      sizeBytes: blob.sizeBytes,
      blob,
    };
  }

  async function complete(
    actor: StorageActor,
    staged: StagedUpload | undefined,
    fields: Record<string, unknown>,
  ): Promise<UploadResponse> {
    try {
      authorizeUpload(actor);
      const organizationId = actor.organizationId as string;
      const errors: ProblemFieldErrors = {};
      if (!staged) errors.file = ['Choose a file to upload.'];
      else if (staged.sizeBytes === 0) errors.file = ['The file is empty.'];
      const parsed = UploadFields.safeParse(fields);
      if (!parsed.success) Object.assign(errors, fieldErrorsFromIssues(parsed.error.issues));
      if (Object.keys(errors).length > 0 || !staged || !parsed.success) throw new ValidationProblem(errors);

      if (scanner) {
        let result: Awaited<ReturnType<Scanner['scan']>>;
        try {
          result = await scanner.scan(staged.blob.read());
        } catch (error) {
          logger.error('the virus scanner could not check an upload', { scanner: scanner.kind, error });
          throw new ProblemError('Storage.ScanUnavailable', undefined, { cause: error });
        }
        if (!result.clean) {
          logger.warn('an upload was rejected by the virus scanner', { signature: result.signature, organizationId });
          throw new ValidationProblem({ file: [`The file contains malware (${result.signature}) and was not stored.`] });
        }
      }

      const id = newId();
      const record: StoredFileRecord = {
        id,
        organizationId,
        bucket: parsed.data.bucket,
        fileName: staged.fileName,
        contentType: staged.contentType,
        sizeBytes: staged.sizeBytes,
        path: parsed.data.path,
        isPublic: parsed.data.isPublic,
        uploadedBy: actor.userId as string,
        uploadedAt: clock.now().toISOString(),
        blobKey: `${organizationId}/${id}`,
      };
      await staged.blob.commit(record.blobKey, { contentType: record.contentType });
      try {
        await store.insert(record);
      } catch (error) {
        await blobs
          .delete(record.blobKey)
          .catch((cleanup: unknown) =>
            logger.error('could not delete the blob of a failed upload', { key: record.blobKey, error: cleanup }),
          );
        throw error;
      }
      return {
        fileId: record.id,
        fileName: record.fileName,
        sizeBytes: record.sizeBytes,
        contentType: record.contentType,
        uploadedAt: record.uploadedAt,
      };
    } finally {
      await staged?.blob.discard();
    }
  }

  return {
    maxUploadBytes,
    authorizeUpload,
    stage,
    complete,

    async upload(actor, input) {
      authorizeUpload(actor);
      const staged = await stage(input.content, input);
      return complete(actor, staged, { bucket: input.bucket, path: input.path, isPublic: input.isPublic });
    },

    async list(actor, query) {
      const organizationId = tenantOf(actor, STORAGE_READ);
      const request = ListFilesQuery.parse(query);
      const slice = await store.list(organizationId, request);
      return toPage({ items: slice.items.map(toMetadata), totalCount: slice.totalCount }, request);
    },

    async get(actor, id) {
      return toMetadata(await visible(actor, id, STORAGE_READ));
    },

    async download(actor, id) {
      const record = await visible(actor, id, STORAGE_READ);
      const content = await blobs.open(record.blobKey);
      if (!content) throw new Error(`The blob ${record.blobKey} of file ${record.id} is missing from the ${blobs.kind} store`);
      return { file: toMetadata(record), body: content.body, sizeBytes: content.sizeBytes };
    },

    async remove(actor, id) {
      const record = await visible(actor, id, STORAGE_WRITE);
      const removed = await store.remove(record.organizationId, record.id);
      if (!removed) throw notFound();
      // The row goes first: a failed blob delete leaves an orphaned blob, never a row without bytes.
      await blobs
        .delete(removed.blobKey)
        .catch((error: unknown) =>
          logger.error('could not delete the blob of a deleted file; it is orphaned', { key: removed.blobKey, error }),
        );
    },
  };
}
