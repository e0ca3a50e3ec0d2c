/**
 * idt's icon (a person on a rounded square in the sign-in pages' blue), as
 * SVG. `GET /favicon.ico` of the sign-in host answers it, so a browser's
 * automatic request for the icon never fails (and never logs a console error).
 */
export const IDT_ICON_SVG =
  '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32"><title>idt</title><rect width="32" height="32" rx="7" fill="#1f4fd1"/>' +
  '<circle cx="16" cy="12.5" r="5" fill="#fff"/><path d="M6.5 26.5c1.4-5 5-7.5 9.5-7.5s8.1 2.5 9.5 7.5z" fill="#fff"/></svg>';

/**
 * The `<link rel="icon">` of idt's HTML pages: the icon inline as a `data:`
 * URL (their policies allow `img-src data:`), so a page asks no other
 * address for it, under a path prefix too (where `/favicon.ico` of the
 * origin is the host application's).
 */
export const IDT_ICON_LINK = `<link rel="icon" type="image/svg+xml" href="data:image/svg+xml,${encodeURIComponent(IDT_ICON_SVG)}">`;
