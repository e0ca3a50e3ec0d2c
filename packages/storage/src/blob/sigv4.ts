import { createHmac } from 'node:crypto';
import { compareCodeUnits, sha256Hex } from '@idt/core';

/** The SHA-256 of an empty payload, hex. */
export const EMPTY_PAYLOAD_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';

/** What {@link signRequest} signs. */
export interface SignRequestInput {
  readonly method: string;
  /** The request URL; its path must already be URI-encoded (see {@link encodeS3Key}). */
  readonly url: URL;
  /** Headers to sign besides `host`, `x-amz-date` and `x-amz-content-sha256` (names in any case). */
  readonly headers?: Readonly<Record<string, string>>;
  /** Hex SHA-256 of the body, or `UNSIGNED-PAYLOAD`. */
  readonly payloadHash: string;
  readonly region: string;
  /** `s3` by default. */
  readonly service?: string;
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  readonly date: Date;
}

/** RFC 3986 encoding as SigV4 wants it: everything but `A-Z a-z 0-9 - _ . ~` is percent-encoded. */
export function encodeRfc3986(value: string): string {
  return encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** An object key as a URL path: each `/`-separated segment encoded, the slashes kept. */
export function encodeS3Key(key: string): string {
  return key.split('/').map(encodeRfc3986).join('/');
}

function hmac(key: Buffer | string, value: string): Buffer {
  return createHmac('sha256', key).update(value, 'utf8').digest();
}

function amzDate(date: Date): string {
  return date
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d{3}/, '');
}

function canonicalQuery(url: URL): string {
  const pairs = [...url.searchParams.entries()].map(([name, value]) => [encodeRfc3986(name), encodeRfc3986(value)] as const);
  pairs.sort(([a, x], [b, y]) => compareCodeUnits(a, b) || compareCodeUnits(x, y));
  return pairs.map(([name, value]) => `${name}=${value}`).join('&');
}

/**
 * Signs a request with AWS Signature Version 4 (header form), as S3 and
 * S3-compatible stores (MinIO, R2, Ceph…) expect.
 *
 * @returns the headers to send: the given ones plus `host`, `x-amz-date`,
 *   `x-amz-content-sha256` and `authorization`.
 * @example
 * const headers = signRequest({ method: 'GET', url, payloadHash: EMPTY_PAYLOAD_SHA256, region, accessKeyId, secretAccessKey, date: new Date() });
 */
export function signRequest(input: SignRequestInput): Record<string, string> {
  const service = input.service ?? 's3';
  const stamp = amzDate(input.date);
  const day = stamp.slice(0, 8);
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(input.headers ?? {})) headers[name.toLowerCase()] = value;
  headers.host = input.url.host;
  headers['x-amz-date'] = stamp;
  headers['x-amz-content-sha256'] = input.payloadHash;
  const names = Object.keys(headers).sort();
  const canonicalHeaders = names.map((name) => `${name}:${String(headers[name]).trim().replace(/\s+/g, ' ')}\n`).join('');
  const signedHeaders = names.join(';');
  const canonicalRequest = [
    input.method.toUpperCase(),
    input.url.pathname || '/',
    canonicalQuery(input.url),
    canonicalHeaders,
    signedHeaders,
    input.payloadHash,
  ].join('\n');
  const scope = `${day}/${input.region}/${service}/aws4_request`;
  const stringToSign = ['AWS4-HMAC-SHA256', stamp, scope, sha256Hex(canonicalRequest)].join('\n');
  const signingKey = hmac(hmac(hmac(hmac(`AWS4${input.secretAccessKey}`, day), input.region), service), 'aws4_request');
  const signature = createHmac('sha256', signingKey).update(stringToSign, 'utf8').digest('hex');
  headers.authorization = `AWS4-HMAC-SHA256 Credential=${input.accessKeyId}/${scope},SignedHeaders=${signedHeaders},Signature=${signature}`;
  return headers;
}
