import { PageQuery, pageSchema } from '@idt/core';
import { z } from 'zod';
import { sanitizePath } from './sanitize.js';

/** A bucket name: 1–63 letters, digits, `.`, `_` or `-`, starting with a letter or digit; case-sensitive. */
export const BucketName = z
  .string({ error: 'Enter a bucket name.' })
  .trim()
  .min(1, 'Enter a bucket name.')
  .max(63, 'A bucket name has at most 63 characters.')
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, "A bucket name is letters, digits, '.', '_' and '-', starting with a letter or digit.")
  .meta({ example: 'documents' });

/** A folder path inside a bucket, sanitized (see `sanitizePath`); `null` when empty. */
export const FolderPath = z
  .string({ error: 'A path is text.' })
  .max(4096, 'A path has at most 4096 characters.')
  .nullish()
  .transform((value) => sanitizePath(value))
  .meta({ description: 'A folder inside the bucket, e.g. `reports/2024`; `..` and empty segments are dropped.' });

const BooleanField = z
  .union([z.boolean(), z.string()], { error: 'Use true or false.' })
  .optional()
  .transform((value, ctx) => {
    if (value === undefined || typeof value === 'boolean') return value ?? false;
    const normalized = value.trim().toLowerCase();
    if (['true', '1', 'on', 'yes'].includes(normalized)) return true;
    if (['false', '0', 'off', 'no', ''].includes(normalized)) return false;
    ctx.addIssue({ code: 'custom', message: 'Use true or false.' });
    return z.NEVER;
  });

/** The form fields of an upload besides the file. */
export const UploadFields = z.object({
  bucket: BucketName,
  path: FolderPath,
  isPublic: BooleanField,
});

/** Validated upload fields. */
export type UploadFields = z.output<typeof UploadFields>;

/** The multipart body of `POST /v1/storage/upload`, for the API document (the route streams it itself). */
export const UploadForm = z.object({
  file: z.file().describe('The file; required and not empty.'),
  bucket: z.string().describe('The bucket; created on first upload.'),
  path: z.string().optional().describe('An optional folder inside the bucket.'),
  isPublic: z.boolean().default(false).describe('Whether the file is meant to be public (metadata only).'),
});

/** The query of `GET /v1/storage/files`. */
export const ListFilesQuery = z.object({
  bucket: BucketName,
  path: FolderPath,
  ...PageQuery.shape,
});

/** A validated listing request. */
export type ListFilesQuery = z.output<typeof ListFilesQuery>;

const timestamp = z.string().meta({ format: 'date-time', description: 'ISO 8601 UTC' });

/** What `POST /v1/storage/upload` answers. */
export const UploadResponse = z.object({
  fileId: z.string().meta({ format: 'uuid' }),
  fileName: z.string().describe('The sanitized file name.'),
  sizeBytes: z.number().int(),
  contentType: z.string().describe('Sniffed from the content, not taken from the client.'),
  uploadedAt: timestamp,
});

/** An upload response. */
export type UploadResponse = z.output<typeof UploadResponse>;

/** The metadata of a stored file. */
export const FileMetadata = z.object({
  id: z.string().meta({ format: 'uuid' }),
  bucket: z.string(),
  fileName: z.string(),
  contentType: z.string(),
  sizeBytes: z.number().int(),
  path: z.string().nullable(),
  isPublic: z.boolean(),
  uploadedBy: z.string().describe('The uploading user.'),
  uploadedAt: timestamp,
});

/** File metadata. */
export type FileMetadata = z.output<typeof FileMetadata>;

/** The paged result of file metadata, for the API document. */
export const FilePage = pageSchema(FileMetadata);
