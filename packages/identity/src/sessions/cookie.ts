/** The attributes of the sign-in session cookie (SameSite=Lax, so links from mail arrive signed in). */
export const SESSION_COOKIE_ATTRIBUTES = 'HttpOnly; Secure; SameSite=Lax; Path=/';

/**
 * A `Set-Cookie` value for the sign-in session cookie.
 *
 * @example
 * formatSessionCookie('idt_session', cookieValue, 86_400);
 * // 'idt_session=…; HttpOnly; Secure; SameSite=Lax; Path=/; Max-Age=86400'
 */
export function formatSessionCookie(name: string, value: string, maxAgeSeconds: number): string {
  return `${name}=${value}; ${SESSION_COOKIE_ATTRIBUTES}; Max-Age=${Math.max(0, Math.floor(maxAgeSeconds))}`;
}

/** A `Set-Cookie` value that deletes the sign-in session cookie. */
export function formatClearedSessionCookie(name: string): string {
  return `${name}=; ${SESSION_COOKIE_ATTRIBUTES}; Max-Age=0; Expires=Thu, 01 Jan 1970 00:00:00 GMT`;
}
