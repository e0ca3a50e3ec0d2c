import { ProblemError } from '@idt/problem';
import type { HeaderReader } from './light.js';

/** Where a body comes from: the request's headers and its bytes (a Fetch `Request` fits). */
export interface BodySource {
  readonly headers: HeaderReader;
  /** The bytes, or `null`; a web `ReadableStream` and a Node stream both qualify. */
  readonly body: AsyncIterable<Uint8Array> | ReadableStream<Uint8Array> | null;
}

/** The default largest JSON or form body: 1 MiB. */
export const DEFAULT_MAX_BODY_BYTES = 1_048_576;

/**
 * Reads a request body up to `maxBytes`, refusing more with 413 without
 * reading the rest.
 */
export async function readBodyText(request: BodySource, maxBytes: number): Promise<string> {
  const declared = request.headers.get('content-length');
  if (declared !== null && Number(declared) > maxBytes) throw tooLarge(maxBytes);
  if (!request.body) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  // Not a for-await loop: leaving one early destroys the stream, and with it
  // a Node request's socket, before the 413 goes out. The host drains the rest.
  const iterator = (request.body as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]();
  for (;;) {
    const { done, value } = await iterator.next();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) throw tooLarge(maxBytes);
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function tooLarge(maxBytes: number): ProblemError {
  return new ProblemError('Http.ClientError', `The request body exceeds ${maxBytes} bytes.`, { status: 413 });
}

/**
 * The media type of a `Content-Type` value, lower-case and without
 * parameters (`'Text/HTML; charset=utf-8'` → `'text/html'`; missing → `''`).
 */
export function mediaTypeOf(contentType: string | null | undefined): string {
  return (contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
}

function mediaType(request: BodySource): string {
  return mediaTypeOf(request.headers.get('content-type'));
}

/**
 * Reads and parses a JSON body. An empty body gives `undefined` so that the
 * route schema decides whether a body is required.
 *
 * @throws ProblemError 415 for another media type, 400 for malformed JSON, 413 when too large.
 */
export async function readJsonBody(request: BodySource, maxBytes = DEFAULT_MAX_BODY_BYTES): Promise<unknown> {
  const text = await readBodyText(request, maxBytes);
  if (text.trim() === '') return undefined;
  const type = mediaType(request);
  if (type !== 'application/json' && !type.endsWith('+json')) {
    throw new ProblemError('Http.ClientError', 'Send the body as application/json.', { status: 415 });
  }
  try {
    return JSON.parse(text);
  } catch {
    throw new ProblemError('Http.ClientError', 'The request body is not valid JSON.');
  }
}

/**
 * Reads an `application/x-www-form-urlencoded` body into an object; a
 * repeated field becomes an array.
 */
export async function readFormBody(
  request: BodySource,
  maxBytes = DEFAULT_MAX_BODY_BYTES,
): Promise<Record<string, string | string[]>> {
  const text = await readBodyText(request, maxBytes);
  if (text === '') return {};
  if (mediaType(request) !== 'application/x-www-form-urlencoded') {
    throw new ProblemError('Http.ClientError', 'Send the body as application/x-www-form-urlencoded.', { status: 415 });
  }
  return searchParamsToObject(new URLSearchParams(text));
}

/** Query or form parameters as an object; a repeated name becomes an array. */
export function searchParamsToObject(params: URLSearchParams): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [key, value] of params) {
    const existing = out[key];
    if (existing === undefined) out[key] = value;
    else if (Array.isArray(existing)) existing.push(value);
    else out[key] = [existing, value];
  }
  return out;
}
