import type { HeaderSource } from '../sessions/current.js';

/** Attributes of a `Set-Cookie` value the BFF writes (always `HttpOnly` and `Path=/`, never `Domain`). */
export interface CookieAttributes {
  readonly maxAgeSeconds: number;
  readonly sameSite: 'Strict' | 'Lax';
  readonly secure: boolean;
}

/**
 * A `Set-Cookie` value: `name=value; Path=/; Max-Age=N; HttpOnly; Secure;
 * SameSite=...`. No `Domain`, so a `__Host-` cookie is accepted.
 */
export function serializeCookie(name: string, value: string, attributes: CookieAttributes): string {
  const parts = [`${name}=${value}`, 'Path=/', `Max-Age=${Math.max(0, Math.floor(attributes.maxAgeSeconds))}`, 'HttpOnly'];
  if (attributes.secure) parts.push('Secure');
  parts.push(`SameSite=${attributes.sameSite}`);
  return parts.join('; ');
}

/** A `Set-Cookie` value that removes a cookie (same name, path and flags, `Max-Age=0`). */
export function expiredCookie(name: string, attributes: Omit<CookieAttributes, 'maxAgeSeconds'>): string {
  return serializeCookie(name, '', { ...attributes, maxAgeSeconds: 0 });
}

/** One request header from a Fetch `Headers` or node's `IncomingHttpHeaders`. */
export function headerOf(headers: HeaderSource, name: string): string | null {
  if (headers instanceof Headers) return headers.get(name);
  const value = (headers as Record<string, string | string[] | undefined>)[name.toLowerCase()];
  if (value === undefined) return null;
  return Array.isArray(value) ? value.join('; ') : value;
}

/** The names of the cookies of a `Cookie` header, in order. */
export function cookieNames(header: string | null): string[] {
  if (!header) return [];
  return header
    .split(';')
    .map((part) => part.slice(0, Math.max(0, part.indexOf('='))).trim())
    .filter((name) => name !== '');
}
