import { decodeUtf8Strict, LightResponse, mediaTypeOf, parseParams } from '@idt/core';
import { FormTooLarge, type PageRequest, readBodyBytes } from './page-request.js';

/** Why a page form could not be read. */
export class PageFormRefused extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Reads a page's URL-encoded form: 415 for another media type, 413 past
 * `maxBytes`, 400 when it is not valid UTF-8 or holds a NUL.
 *
 * @throws PageFormRefused
 */
export async function readPageForm(request: PageRequest, maxBytes: number): Promise<URLSearchParams> {
  if (mediaTypeOf(request.headers.get('content-type')) !== 'application/x-www-form-urlencoded') {
    throw new PageFormRefused(415, 'Send the form as the page does (application/x-www-form-urlencoded).');
  }
  let bytes: Buffer;
  try {
    bytes = await readBodyBytes(request, maxBytes);
  } catch (error) {
    if (error instanceof FormTooLarge) throw new PageFormRefused(413, 'The form is too large.');
    throw error;
  }
  const text = decodeUtf8Strict(bytes);
  if (text === undefined || !safeParams(text)) {
    throw new PageFormRefused(400, 'The form contains characters that are not allowed.');
  }
  return new URLSearchParams(text);
}

/**
 * Whether a query string (or form) decodes strictly: valid UTF-8, no NUL,
 * no lone surrogate.
 *
 * @example
 * if (!safeParams(request.url.search)) return unreadablePage();
 */
export function safeParams(text: string): boolean {
  try {
    parseParams(text);
    return true;
  } catch {
    return false;
  }
}

/**
 * The plain `405 Method Not Allowed` of a page, naming the methods it
 * takes in `Allow`.
 *
 * @example
 * if (request.method !== 'POST') return methodNotAllowed('POST');
 */
export function methodNotAllowed(allow: string): LightResponse {
  return new LightResponse('Method Not Allowed', {
    status: 405,
    headers: { allow, 'content-type': 'text/plain; charset=utf-8' },
  });
}

/**
 * Whether a form post comes from this site: a browser names the page's
 * origin in `Origin` (or says `Sec-Fetch-Site: same-origin`); a caller that
 * sends neither is not a browser another site can make post. Under the
 * pages' `Referrer-Policy: no-referrer` a browser sends `Origin: null` with
 * a same-origin form post, so `null` counts only with
 * `Sec-Fetch-Site: same-origin`.
 */
export function postedFromThisSite(request: PageRequest): boolean {
  const origin = request.headers.get('origin');
  const host = request.headers.get('host');
  if (origin === 'null') return request.headers.get('sec-fetch-site') === 'same-origin';
  if (origin !== null) {
    if (origin === request.url.origin) return true;
    try {
      return host !== null && new URL(origin).host === host;
    } catch {
      return false;
    }
  }
  const site = request.headers.get('sec-fetch-site');
  return site === null || site === 'same-origin' || site === 'none';
}
