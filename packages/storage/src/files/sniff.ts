import { mediaTypeOf } from '@idt/core';
/** How many leading bytes {@link sniffContentType} looks at. */
export const SNIFF_BYTES = 4100;

/** The type of content no rule recognizes. */
export const BINARY_CONTENT_TYPE = 'application/octet-stream';

type Rule = { readonly type: string; readonly test: (head: Uint8Array) => boolean };

function bytesAt(head: Uint8Array, offset: number, expected: readonly number[]): boolean {
  if (head.length < offset + expected.length) return false;
  for (let i = 0; i < expected.length; i++) if (head[offset + i] !== expected[i]) return false;
  return true;
}

function asciiAt(head: Uint8Array, offset: number, text: string): boolean {
  return bytesAt(
    head,
    offset,
    Array.from(text, (c) => c.charCodeAt(0)),
  );
}

function includesAscii(head: Uint8Array, text: string, from = 0): boolean {
  return Buffer.from(head.buffer, head.byteOffset, head.byteLength).includes(text, from, 'latin1');
}

function isoBrand(head: Uint8Array): string | undefined {
  if (!asciiAt(head, 4, 'ftyp') || head.length < 12) return undefined;
  return String.fromCharCode(...head.subarray(8, 12));
}

/** Magic numbers of common formats, most specific first. */
const RULES: readonly Rule[] = [
  { type: 'image/png', test: (h) => bytesAt(h, 0, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]) },
  { type: 'image/jpeg', test: (h) => bytesAt(h, 0, [0xff, 0xd8, 0xff]) },
  { type: 'image/gif', test: (h) => asciiAt(h, 0, 'GIF87a') || asciiAt(h, 0, 'GIF89a') },
  { type: 'image/webp', test: (h) => asciiAt(h, 0, 'RIFF') && asciiAt(h, 8, 'WEBP') },
  { type: 'audio/wav', test: (h) => asciiAt(h, 0, 'RIFF') && asciiAt(h, 8, 'WAVE') },
  { type: 'video/x-msvideo', test: (h) => asciiAt(h, 0, 'RIFF') && asciiAt(h, 8, 'AVI ') },
  { type: 'image/bmp', test: (h) => asciiAt(h, 0, 'BM') && bytesAt(h, 6, [0, 0, 0, 0]) },
  { type: 'image/tiff', test: (h) => bytesAt(h, 0, [0x49, 0x49, 0x2a, 0x00]) || bytesAt(h, 0, [0x4d, 0x4d, 0x00, 0x2a]) },
  { type: 'image/x-icon', test: (h) => bytesAt(h, 0, [0x00, 0x00, 0x01, 0x00]) && h.length >= 6 && (h[4] ?? 0) > 0 },
  { type: 'image/avif', test: (h) => ['avif', 'avis'].includes(isoBrand(h) ?? '') },
  { type: 'image/heic', test: (h) => ['heic', 'heix', 'heim', 'heis', 'mif1', 'msf1'].includes(isoBrand(h) ?? '') },
  { type: 'video/quicktime', test: (h) => isoBrand(h) === 'qt  ' },
  { type: 'audio/mp4', test: (h) => ['M4A ', 'M4B '].includes(isoBrand(h) ?? '') },
  { type: 'video/mp4', test: (h) => isoBrand(h) !== undefined },
  { type: 'video/webm', test: (h) => bytesAt(h, 0, [0x1a, 0x45, 0xdf, 0xa3]) && includesAscii(h.subarray(0, 64), 'webm') },
  { type: 'video/x-matroska', test: (h) => bytesAt(h, 0, [0x1a, 0x45, 0xdf, 0xa3]) },
  { type: 'audio/mpeg', test: (h) => asciiAt(h, 0, 'ID3') || bytesAt(h, 0, [0xff, 0xfb]) || bytesAt(h, 0, [0xff, 0xf3]) },
  { type: 'audio/ogg', test: (h) => asciiAt(h, 0, 'OggS') },
  { type: 'audio/flac', test: (h) => asciiAt(h, 0, 'fLaC') },
  { type: 'application/pdf', test: (h) => asciiAt(h, 0, '%PDF-') },
  { type: 'application/postscript', test: (h) => asciiAt(h, 0, '%!PS') },
  { type: 'application/rtf', test: (h) => asciiAt(h, 0, '{\\rtf') },
  { type: 'application/gzip', test: (h) => bytesAt(h, 0, [0x1f, 0x8b, 0x08]) },
  { type: 'application/x-bzip2', test: (h) => asciiAt(h, 0, 'BZh') && bytesAt(h, 4, [0x31, 0x41, 0x59, 0x26, 0x53, 0x59]) },
  { type: 'application/x-xz', test: (h) => bytesAt(h, 0, [0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00]) },
  { type: 'application/x-7z-compressed', test: (h) => bytesAt(h, 0, [0x37, 0x7a, 0xbc, 0xaf, 0x27, 0x1c]) },
  { type: 'application/vnd.rar', test: (h) => asciiAt(h, 0, 'Rar!\x1a\x07') },
  { type: 'application/zstd', test: (h) => bytesAt(h, 0, [0x28, 0xb5, 0x2f, 0xfd]) },
  { type: 'application/vnd.sqlite3', test: (h) => asciiAt(h, 0, 'SQLite format 3\0') },
  { type: 'application/wasm', test: (h) => bytesAt(h, 0, [0x00, 0x61, 0x73, 0x6d]) },
  { type: 'application/x-executable', test: (h) => bytesAt(h, 0, [0x7f, 0x45, 0x4c, 0x46]) },
  { type: 'application/x-msdownload', test: (h) => asciiAt(h, 0, 'MZ') && h.length >= 64 },
  { type: 'application/zip', test: (h) => bytesAt(h, 0, [0x50, 0x4b, 0x03, 0x04]) || bytesAt(h, 0, [0x50, 0x4b, 0x05, 0x06]) },
];

/** Zip-based document formats, told apart by the first entry or the extension. */
const OOXML: Readonly<Record<string, string>> = {
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  pptx: 'application/vnd.openxmlformats-officedocument.presentationml.presentation',
};

/** Text types a client may name for a file that sniffs as text; anything else (HTML, SVG, XML…) becomes `text/plain`. */
const TEXT_HINTS: Readonly<Record<string, string>> = {
  'text/plain': 'text/plain; charset=utf-8',
  'text/csv': 'text/csv; charset=utf-8',
  'text/tab-separated-values': 'text/tab-separated-values; charset=utf-8',
  'text/markdown': 'text/markdown; charset=utf-8',
  'text/calendar': 'text/calendar; charset=utf-8',
  'text/vcard': 'text/vcard; charset=utf-8',
  'application/json': 'application/json',
};

const TEXT_EXTENSIONS: Readonly<Record<string, string>> = {
  txt: 'text/plain',
  log: 'text/plain',
  csv: 'text/csv',
  tsv: 'text/tab-separated-values',
  md: 'text/markdown',
  markdown: 'text/markdown',
  ics: 'text/calendar',
  vcf: 'text/vcard',
  json: 'application/json',
};

function extensionOf(fileName: string | undefined): string {
  const match = /\.([A-Za-z0-9]{1,10})$/.exec(fileName ?? '');
  return match?.[1]?.toLowerCase() ?? '';
}

/**
 * Whether the bytes look like UTF-8 text: valid UTF-8 (a sequence cut at the
 * end of the sample is allowed) without NUL or other control characters
 * besides tab, line breaks, form feed and escape.
 */
export function looksLikeText(head: Uint8Array): boolean {
  if (head.length === 0) return false;
  let i = 0;
  while (i < head.length) {
    const byte = head[i] as number;
    if (byte < 0x80) {
      if (byte < 0x20 && byte !== 0x09 && byte !== 0x0a && byte !== 0x0d && byte !== 0x0c && byte !== 0x1b) return false;
      if (byte === 0x7f) return false;
      i += 1;
      continue;
    }
    const length = byte >= 0xf0 && byte <= 0xf4 ? 4 : byte >= 0xe0 ? 3 : byte >= 0xc2 && byte <= 0xdf ? 2 : 0;
    if (length === 0 || byte > 0xf4) return false;
    for (let k = 1; k < length; k++) {
      if (i + k >= head.length) return true; // cut by the sample
      const next = head[i + k] as number;
      if ((next & 0xc0) !== 0x80) return false;
    }
    i += length;
  }
  return true;
}

/**
 * The content type of a file from its first bytes (at least
 * {@link SNIFF_BYTES} of them when the file is that long). The client's
 * declared type is never trusted: it is only a hint for a file that sniffs
 * as text, and only among harmless text types (`text/csv`, `application/json`,
 * `text/markdown`…); the file name's extension is the next hint, and
 * `text/plain` the default. Zip files named `.docx`, `.xlsx` or `.pptx` that
 * hold `[Content_Types].xml` get the Office type. Anything unrecognized is
 * `application/octet-stream`.
 *
 * @example
 * sniffContentType(pngBytes, { fileName: 'x.txt', declaredType: 'text/html' }); // 'image/png'
 * sniffContentType(Buffer.from('a,b\n1,2\n'), { fileName: 'data.csv' }); // 'text/csv; charset=utf-8'
 */
export function sniffContentType(head: Uint8Array, hints: { fileName?: string; declaredType?: string } = {}): string {
  const extension = extensionOf(hints.fileName);
  for (const rule of RULES) {
    if (!rule.test(head)) continue;
    if (rule.type === 'application/zip' && OOXML[extension] && includesAscii(head, '[Content_Types].xml')) {
      return OOXML[extension] as string;
    }
    return rule.type;
  }
  let text = head;
  if (bytesAt(head, 0, [0xef, 0xbb, 0xbf])) text = head.subarray(3);
  if (!looksLikeText(text)) return BINARY_CONTENT_TYPE;
  const declared = TEXT_HINTS[mediaTypeOf(hints.declaredType)];
  if (declared) return declared;
  const byExtension = TEXT_EXTENSIONS[extension];
  return TEXT_HINTS[byExtension ?? 'text/plain'] as string;
}
