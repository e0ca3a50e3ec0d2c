import { memberPath, ProblemError, ValidationProblem } from '@idt/problem';
import type { HeaderReader } from './light.js';

/** Where a body comes from: the request's headers and its bytes (a Fetch `Request` fits). */
export interface BodySource {
  readonly headers: HeaderReader;
  /** The bytes, or `null`; a web `ReadableStream` and a Node stream both qualify. */
  readonly body: AsyncIterable<Uint8Array> | ReadableStream<Uint8Array> | null;
}

/** The default largest JSON or form body: 1 MiB. */
export const DEFAULT_MAX_BODY_BYTES = 1_048_576;

/** The field message of text refused at the edge (see {@link isSafeText}). */
export const UNSAFE_TEXT_MESSAGE = 'Contains a NUL character or bytes that are not valid UTF-8.';

/** NUL, a high surrogate not followed by a low one, or a low surrogate not preceded by a high one. */
const UNSAFE_TEXT = /\0|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/**
 * Whether a string can be stored as text on every supported database: no NUL
 * character (Postgres refuses it) and no lone surrogate (not valid UTF-8).
 */
export function isSafeText(value: string): boolean {
  return !UNSAFE_TEXT.test(value);
}

/** A 400 `Validation.Failed` naming the fields that hold unsafe text. */
export function unsafeTextProblem(fields: readonly string[]): ValidationProblem {
  return new ValidationProblem(Object.fromEntries(fields.map((field) => [field, [UNSAFE_TEXT_MESSAGE]])));
}

/**
 * Percent-decodes a URL component strictly: `undefined` when an escape is
 * malformed, the bytes are not valid UTF-8 (overlong forms and encoded
 * surrogates included) or the result holds a NUL character.
 */
export function decodeComponent(value: string): string | undefined {
  let decoded: string;
  try {
    decoded = value.includes('%') ? decodeURIComponent(value) : value;
  } catch {
    return undefined;
  }
  return isSafeText(decoded) ? decoded : undefined;
}

/** Runs of well-formed percent escapes; a `%` not followed by two hex digits stays literal, as in URLSearchParams. */
const ESCAPE_RUN = /(?:%[0-9A-Fa-f]{2})+/g;

function decodeFormComponent(value: string): string | undefined {
  const spaced = value.includes('+') ? value.replace(/\+/g, ' ') : value;
  let decoded: string;
  try {
    decoded = spaced.includes('%') ? spaced.replace(ESCAPE_RUN, (run) => decodeURIComponent(run)) : spaced;
  } catch {
    return undefined;
  }
  return isSafeText(decoded) ? decoded : undefined;
}

/**
 * Parses a query string (with or without its `?`) or a URL-encoded form like
 * `URLSearchParams`, but strictly: a name or value whose escapes are not
 * valid UTF-8, or which holds a NUL or a lone surrogate, is refused instead
 * of silently becoming U+FFFD. A repeated name becomes an array.
 *
 * @throws ValidationProblem 400 `Validation.Failed` naming the offending fields.
 */
export function parseParams(text: string): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  const unsafe: string[] = [];
  for (const pair of (text.startsWith('?') ? text.slice(1) : text).split('&')) {
    if (pair === '') continue;
    const index = pair.indexOf('=');
    const rawName = index === -1 ? pair : pair.slice(0, index);
    const name = decodeFormComponent(rawName);
    const value = decodeFormComponent(index === -1 ? '' : pair.slice(index + 1));
    if (name === undefined || value === undefined) {
      // A name that cannot be decoded is named as sent: its escapes are plain ASCII.
      const field = name ?? rawName;
      if (!unsafe.includes(field)) unsafe.push(field);
      continue;
    }
    addParam(out, name, value);
  }
  if (unsafe.length > 0) throw unsafeTextProblem(unsafe);
  return out;
}

/**
 * The member paths (`a.b[0]`) of the strings, keys included, that hold unsafe
 * text in a parsed JSON value (at most 20). Walks with its own stack: a
 * deeply nested body must not overflow the call stack.
 */
function unsafeMembers(root: unknown): string[] {
  interface Visit {
    readonly value: unknown;
    readonly key?: PropertyKey;
    readonly parent?: Visit;
  }
  const pathOf = (visit: Visit | undefined): string => {
    const path: PropertyKey[] = [];
    for (let at = visit; at?.key !== undefined; at = at.parent) path.push(at.key);
    return memberPath(path.reverse());
  };
  const found: string[] = [];
  const pending: Visit[] = [{ value: root }];
  while (pending.length > 0 && found.length < 20) {
    const visit = pending.pop() as Visit;
    const { value } = visit;
    if (typeof value === 'string') {
      if (!isSafeText(value)) found.push(pathOf(visit));
    } else if (Array.isArray(value)) {
      for (let index = 0; index < value.length; index++) pending.push({ value: value[index], key: index, parent: visit });
    } else if (typeof value === 'object' && value !== null) {
      for (const [key, item] of Object.entries(value)) {
        if (isSafeText(key)) pending.push({ value: item, key, parent: visit });
        else found.push(pathOf(visit));
      }
    }
  }
  return found;
}

const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true });

/** Decodes bytes as UTF-8 strictly: `undefined` when they are not valid UTF-8 (instead of U+FFFD). */
export function decodeUtf8Strict(bytes: Uint8Array): string | undefined {
  try {
    return STRICT_UTF8.decode(bytes);
  } catch {
    return undefined;
  }
}

/**
 * Reads a request body up to `maxBytes`, refusing more with 413 without
 * reading the rest.
 *
 * @throws ProblemError 415 for a body with a content coding (gzip, br ...); 413 when too large;
 *   ValidationProblem 400 when the bytes are not valid UTF-8.
 */
export async function readBodyText(request: BodySource, maxBytes: number): Promise<string> {
  const encoding = request.headers.get('content-encoding');
  if (encoding !== null && !isIdentityEncoding(encoding)) throw unsupportedEncoding();
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
  const text = decodeUtf8Strict(Buffer.concat(chunks));
  if (text === undefined) throw unsafeTextProblem(['']);
  return text;
}

/** Whether a `Content-Encoding` value leaves the bytes as they are (`identity`, or nothing listed). */
function isIdentityEncoding(value: string): boolean {
  return value.split(',').every((coding) => {
    const name = coding.trim().toLowerCase();
    return name === '' || name === 'identity';
  });
}

/** A compressed body is refused rather than read as text: RFC 9110 15.5.16, with the codings taken. */
function unsupportedEncoding(): ProblemError {
  return new ProblemError('Http.ClientError', 'Send the request body without a Content-Encoding (identity).', {
    status: 415,
    headers: { 'accept-encoding': 'identity' },
  });
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
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new ProblemError('Http.ClientError', 'The request body is not valid JSON.');
  }
  // The text is valid UTF-8 and JSON allows no raw control characters in strings: only \u escapes can yield unsafe text.
  if (text.includes('\\u')) {
    const unsafe = unsafeMembers(parsed);
    if (unsafe.length > 0) throw unsafeTextProblem(unsafe);
  }
  return parsed;
}

/**
 * Reads an `application/x-www-form-urlencoded` body into an object; a
 * repeated field becomes an array.
 *
 * @throws ValidationProblem 400 naming fields that are not valid UTF-8 or hold a NUL (see {@link parseParams}).
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
  return parseParams(text);
}

/** Query or form parameters as an object; a repeated name becomes an array. */
export function searchParamsToObject(params: URLSearchParams): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [key, value] of params) addParam(out, key, value);
  return out;
}

/** Adds a parameter; a repeated name becomes an array. */
function addParam(out: Record<string, string | string[]>, name: string, value: string): void {
  const existing = out[name];
  if (existing === undefined) out[name] = value;
  else if (Array.isArray(existing)) existing.push(value);
  else out[name] = [existing, value];
}
