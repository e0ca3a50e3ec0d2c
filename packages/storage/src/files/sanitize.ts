/** The longest file name kept, in characters (code points). */
export const MAX_FILE_NAME_LENGTH = 255;
/** The longest folder path kept, in characters (code points). */
export const MAX_PATH_LENGTH = 1024;
/** The name given to a file whose name sanitizes to nothing. */
export const FALLBACK_FILE_NAME = 'file';

// Control characters (C0, DEL, C1) and format characters (bidi overrides, zero-width marks, BOM).
const INVISIBLE = /[\p{Cc}\p{Cf}]/gu;
// Characters that cannot appear in file names on common file systems.
const RESERVED = /[<>:"|?*]/g;

function codePoints(value: string): string[] {
  return Array.from(value);
}

function truncate(value: string, max: number): string {
  const points = codePoints(value);
  return points.length <= max ? value : points.slice(0, max).join('');
}

/** Cleans one name segment: no invisible or reserved characters, single spaces, no leading dots, no trailing dots or spaces. */
function cleanSegment(segment: string): string {
  return segment
    .replace(INVISIBLE, '')
    .replace(RESERVED, '_')
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/^\.+/, '')
    .replace(/[. ]+$/, '');
}

/**
 * Makes a client-supplied file name safe to store and to send back in a
 * `Content-Disposition` header: Unicode NFC, no control or format
 * characters, no directory part (`../../etc/passwd` → `passwd`, `C:\x\y.txt`
 * → `y.txt`), no characters reserved on common file systems (replaced by
 * `_`), no leading dots, at most 255 characters with the extension kept.
 *
 * @returns the clean name, or {@link FALLBACK_FILE_NAME} when nothing is left.
 * @example
 * sanitizeFileName('../../etc/pa\u0000ss wd.txt'); // 'pass wd.txt'
 */
export function sanitizeFileName(raw: string | null | undefined): string {
  const base = (raw ?? '').normalize('NFC').replace(INVISIBLE, '').split(/[/\\]/).pop() ?? '';
  const name = cleanSegment(base);
  if (name === '') return FALLBACK_FILE_NAME;
  if (codePoints(name).length <= MAX_FILE_NAME_LENGTH) return name;
  const dot = name.lastIndexOf('.');
  const extension = dot > 0 ? name.slice(dot) : '';
  if (extension !== '' && codePoints(extension).length <= 16) {
    return truncate(name.slice(0, dot), MAX_FILE_NAME_LENGTH - codePoints(extension).length) + extension;
  }
  return truncate(name, MAX_FILE_NAME_LENGTH);
}

/**
 * Makes a client-supplied folder path safe: backslashes become slashes,
 * empty, `.` and `..` segments are dropped (so a path can never climb out
 * of its bucket), each segment is cleaned like a file name, and the result
 * is at most 1024 characters of whole segments. Paths are metadata only:
 * blobs are stored under generated keys.
 *
 * @returns the clean path without leading or trailing slashes, or `null` when nothing is left.
 * @example
 * sanitizePath('/reports/../2024//q1/'); // 'reports/2024/q1'
 */
export function sanitizePath(raw: string | null | undefined): string | null {
  if (raw === null || raw === undefined) return null;
  const segments: string[] = [];
  let length = 0;
  for (const part of raw.normalize('NFC').replace(INVISIBLE, '').split(/[/\\]/)) {
    const segment = truncate(cleanSegment(part), MAX_FILE_NAME_LENGTH);
    if (segment === '') continue;
    const added = codePoints(segment).length + (segments.length > 0 ? 1 : 0);
    if (length + added > MAX_PATH_LENGTH) break;
    segments.push(segment);
    length += added;
  }
  return segments.length > 0 ? segments.join('/') : null;
}

/**
 * A `Content-Disposition: attachment` header value for a stored file name:
 * an ASCII fallback `filename` and the exact name as RFC 8187 `filename*`.
 *
 * @example
 * contentDisposition('Résumé "final".pdf');
 * // attachment; filename="Resume _final_.pdf"; filename*=UTF-8''R%C3%A9sum%C3%A9%20%22final%22.pdf
 */
export function contentDisposition(fileName: string): string {
  const name = sanitizeFileName(fileName);
  const ascii =
    name
      .normalize('NFKD')
      .replace(/[\u0300-\u036f]/g, '')
      .replace(/[^\x20-\x7e]/g, '_')
      .replace(/["\\%]/g, '_')
      .trim() || FALLBACK_FILE_NAME;
  const encoded = encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encoded}`;
}
