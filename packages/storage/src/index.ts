/**
 * File storage for idt (SPEC 4.9): streamed multipart uploads with a size
 * limit enforced while streaming, sniffed content types, sanitized names,
 * listings, downloads and deletes, owned by an organization. The blob-store
 * port has a filesystem adapter (default) and an S3-compatible one; the
 * scanner port a ClamAV (clamd INSTREAM) one. The knex metadata store and
 * migrations are in `@idt/storage/knex`.
 *
 * @packageDocumentation
 */
import './problems.js';

export type { FileSystemBlobStoreOptions } from './blob/filesystem.js';
export { createFileSystemBlobStore, OBJECTS_FOLDER, STAGING_FOLDER } from './blob/filesystem.js';
export { createBlobStoreFromSettings, createScannerFromSettings } from './blob/from-settings.js';
export type { S3BlobStoreOptions } from './blob/s3.js';
export { createS3BlobStore, S3Error } from './blob/s3.js';
export type { SignRequestInput } from './blob/sigv4.js';
export { EMPTY_PAYLOAD_SHA256, encodeRfc3986, encodeS3Key, signRequest } from './blob/sigv4.js';
export type { BlobContent, BlobStore, StagedBlob } from './blob/store.js';
export { assertBlobKey } from './blob/store.js';
export {
  contentDisposition,
  FALLBACK_FILE_NAME,
  MAX_FILE_NAME_LENGTH,
  MAX_PATH_LENGTH,
  sanitizeFileName,
  sanitizePath,
} from './files/sanitize.js';
export {
  BucketName,
  FileMetadata,
  FilePage,
  FolderPath,
  ListFilesQuery,
  UploadFields,
  UploadForm,
  UploadResponse,
} from './files/schemas.js';
export type {
  FileDownload,
  StagedUpload,
  StorageActor,
  StorageService,
  StorageServiceOptions,
  UploadFileInfo,
} from './files/service.js';
export { createStorageService, fileTooLarge, STORAGE_READ, STORAGE_WRITE } from './files/service.js';
export { BINARY_CONTENT_TYPE, looksLikeText, SNIFF_BYTES, sniffContentType } from './files/sniff.js';
export type { FilesStore, StoredFileRecord } from './files/store.js';
export type { MultipartUpload, MultipartUploadOptions } from './http/multipart.js';
export { readMultipartUpload } from './http/multipart.js';
export { createStorageRoutes } from './http/routes.js';
export type { StorageModuleOptions, StorageServices } from './module.js';
export { storage } from './module.js';
export { StorageCodes } from './problems.js';
export type { ClamAvScannerOptions } from './scan/clamav.js';
export { createClamAvScanner, parseClamdReply } from './scan/clamav.js';
export type { Scanner, ScanResult } from './scan/scanner.js';
export { ScanError } from './scan/scanner.js';
export type { S3Settings, StorageSettings } from './settings.js';
export { DEFAULT_MAX_UPLOAD_BYTES, resolveStorageSettings, storageVariables } from './settings.js';
