import { decodeUtf8Strict, mediaTypeOf, parseParams } from '@idt/core';
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
  try {
    if (text === undefined) throw new Error('not UTF-8');
    parseParams(text);
  } catch {
    throw new PageFormRefused(400, 'The form contains characters that are not allowed.');
  }
  return new URLSearchParams(text as string);
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
