import { once } from 'node:events';
import type { Readable } from 'node:stream';
import { mediaTypeOf } from '@idt/core';
import { ProblemError, ValidationProblem } from '@idt/problem';
import busboy from 'busboy';
import { fileTooLarge, type StagedUpload, type UploadFileInfo } from '../files/service.js';

/** Options of {@link readMultipartUpload}. */
export interface MultipartUploadOptions {
  /** The largest request body, in bytes; counted while streaming. */
  readonly maxBytes: number;
  /** Streams the file part somewhere (the storage service's `stage`). */
  readonly stage: (content: Readable, info: UploadFileInfo) => Promise<StagedUpload>;
  /** The name of the file part (default `file`). */
  readonly fileField?: string;
}

/** A parsed upload: the staged file (when the form had one) and the text fields. */
export interface MultipartUpload {
  readonly staged: StagedUpload | undefined;
  /** The first value of each text field. */
  readonly fields: Record<string, string>;
}

const MAX_FIELD_BYTES = 64 * 1024;

/** A response that leaves part of the request unread must close the connection, or the client keeps sending into it. */
function closingConnection(error: unknown): unknown {
  if (error instanceof ProblemError) error.headers.connection = 'close';
  return error;
}

function malformed(error: unknown): ProblemError {
  const message = error instanceof Error ? error.message : String(error);
  return new ProblemError('Http.ClientError', `The multipart body is malformed (${message}).`, { cause: error });
}

/**
 * Reads a `multipart/form-data` upload from a Fetch request's body stream
 * with busboy, without buffering: the file part streams into `stage` as it
 * arrives (with back-pressure), text fields are collected. The body is
 * counted while it streams and refused past `maxBytes` (413
 * `Storage.FileTooLarge`; a larger `Content-Length` is refused before
 * reading). On any failure the parser is destroyed, a staged file is
 * discarded before this rejects, and the answer asks the client to close
 * the connection when part of the body was left unread. Fields may come
 * before or after the file.
 *
 * @throws ProblemError 415 for another media type, 400 for a malformed body or more than one file, 413 past the limit.
 */
export async function readMultipartUpload(request: Request, options: MultipartUploadOptions): Promise<MultipartUpload> {
  const { maxBytes } = options;
  const fileField = options.fileField ?? 'file';
  const contentType = request.headers.get('content-type') ?? '';
  if (mediaTypeOf(contentType) !== 'multipart/form-data') {
    throw closingConnection(new ProblemError('Http.ClientError', 'Send the upload as multipart/form-data.', { status: 415 }));
  }
  const declared = request.headers.get('content-length');
  if (declared !== null && Number(declared) > maxBytes) throw closingConnection(fileTooLarge(maxBytes));
  if (!request.body) return { staged: undefined, fields: {} };

  let parser: busboy.Busboy;
  try {
    parser = busboy({
      headers: { 'content-type': contentType },
      defParamCharset: 'utf8',
      limits: { files: 1, fileSize: maxBytes + 1, fields: 20, fieldSize: MAX_FIELD_BYTES, parts: 30, headerPairs: 50 },
    });
  } catch (error) {
    throw closingConnection(malformed(error));
  }

  const fields: Record<string, string> = {};
  let staging: Promise<StagedUpload> | undefined;
  let failure: { error: unknown } | undefined;
  let signalFailure: (error: unknown) => void = () => undefined;
  const failed = new Promise<never>((_, reject) => {
    signalFailure = reject;
  });
  failed.catch(() => undefined);
  const fail = (error: unknown) => {
    if (failure) return;
    failure = { error };
    signalFailure(error);
  };

  parser.on('field', (name, value, info) => {
    if (info.nameTruncated || info.valueTruncated) {
      fail(new ValidationProblem({ [name]: [`A form field has at most ${MAX_FIELD_BYTES} bytes.`] }));
      return;
    }
    if (!Object.hasOwn(fields, name)) fields[name] = value;
  });
  parser.on('file', (name, stream, info) => {
    if (name !== fileField || staging) {
      stream.resume();
      if (name === fileField) fail(new ValidationProblem({ [fileField]: ['Send one file.'] }));
      return;
    }
    // Browsers escape `"`, CR and LF in a multipart file name as %22, %0D and %0A (HTML's form encoding).
    const fileName = info.filename?.replace(/%22/g, '"').replace(/%0[DA]/gi, ' ');
    staging = options.stage(stream, { fileName, declaredType: info.mimeType });
    staging.catch(fail);
  });
  parser.on('filesLimit', () => fail(new ValidationProblem({ [fileField]: ['Send one file.'] })));
  parser.on('fieldsLimit', () => fail(new ProblemError('Http.ClientError', 'The form has too many fields.')));
  parser.on('partsLimit', () => fail(new ProblemError('Http.ClientError', 'The form has too many parts.')));
  parser.on('error', (error) => fail(malformed(error)));
  const closed = once(parser, 'close');
  closed.catch(() => undefined);

  const reader = request.body.getReader();
  let received = 0;
  let drained = false;
  try {
    while (!failure) {
      const next = await reader.read();
      if (next.done) {
        drained = true;
        parser.end();
        break;
      }
      received += next.value.byteLength;
      if (received > maxBytes) {
        fail(fileTooLarge(maxBytes));
        break;
      }
      if (!parser.write(next.value)) await Promise.race([once(parser, 'drain'), failed]);
    }
    if (!failure) await Promise.race([closed, failed]);
    if (!failure && staging) await Promise.race([staging, failed]);
  } catch (error) {
    fail(error);
  }

  if (!failure) return { staged: await staging, fields };
  parser.destroy();
  const outcome = staging ? await Promise.allSettled([staging]) : [];
  for (const settled of outcome) if (settled.status === 'fulfilled') await settled.value.blob.discard();
  if (!drained) {
    // Leave the rest of the body unread; the response closes the connection.
    reader.releaseLock();
    throw closingConnection(failure.error);
  }
  throw failure.error;
}
