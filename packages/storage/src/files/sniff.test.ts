import { describe, expect, it } from 'vitest';
import { looksLikeText, sniffContentType } from './sniff.js';

const bytes = (...values: number[]) => Uint8Array.from(values);
const ascii = (text: string) => Buffer.from(text, 'latin1');

describe('sniffContentType', () => {
  it.each([
    ['png', bytes(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0), 'image/png'],
    ['jpeg', bytes(0xff, 0xd8, 0xff, 0xe1), 'image/jpeg'],
    ['gif', ascii('GIF89a....'), 'image/gif'],
    ['webp', ascii('RIFF\0\0\0\0WEBPVP8 '), 'image/webp'],
    ['wav', ascii('RIFF\0\0\0\0WAVEfmt '), 'audio/wav'],
    ['pdf', ascii('%PDF-1.4\n'), 'application/pdf'],
    ['zip', bytes(0x50, 0x4b, 0x03, 0x04, 0x14, 0), 'application/zip'],
    ['gzip', bytes(0x1f, 0x8b, 0x08, 0), 'application/gzip'],
    ['mp4', bytes(0, 0, 0, 0x18, ...ascii('ftypisom')), 'video/mp4'],
    ['heic', bytes(0, 0, 0, 0x18, ...ascii('ftypheic')), 'image/heic'],
    ['mov', bytes(0, 0, 0, 0x14, ...ascii('ftypqt  ')), 'video/quicktime'],
    ['webm', bytes(0x1a, 0x45, 0xdf, 0xa3, ...ascii('....webm')), 'video/webm'],
    ['mp3', ascii('ID3\u0003\0'), 'audio/mpeg'],
    ['elf', bytes(0x7f, 0x45, 0x4c, 0x46, 2), 'application/x-executable'],
    ['sqlite', ascii('SQLite format 3\0xx'), 'application/vnd.sqlite3'],
    ['binary', bytes(0, 1, 2, 3), 'application/octet-stream'],
    ['invalid utf-8', bytes(0x41, 0xc3, 0x28), 'application/octet-stream'],
  ])('%s', (_name, head, expected) => {
    expect(sniffContentType(head, { declaredType: 'text/plain', fileName: 'x.txt' })).toBe(expected);
  });

  it('never trusts the declared type of binary content', () => {
    expect(sniffContentType(bytes(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a), { declaredType: 'text/html' })).toBe(
      'image/png',
    );
    expect(sniffContentType(bytes(0, 0, 0, 0), { declaredType: 'image/png', fileName: 'a.png' })).toBe(
      'application/octet-stream',
    );
  });

  it('uses the declared type or the extension only to name harmless text', () => {
    const csv = Buffer.from('a,b\n1,2\n');
    expect(sniffContentType(csv, { declaredType: 'text/csv' })).toBe('text/csv; charset=utf-8');
    expect(sniffContentType(csv, { fileName: 'data.csv' })).toBe('text/csv; charset=utf-8');
    expect(sniffContentType(csv, { fileName: 'data.json', declaredType: 'application/json; charset=utf-8' })).toBe(
      'application/json',
    );
    expect(sniffContentType(csv)).toBe('text/plain; charset=utf-8');
    for (const declaredType of ['text/html', 'image/svg+xml', 'application/xml', 'application/javascript']) {
      expect(sniffContentType(Buffer.from('<svg onload="alert(1)"/>'), { declaredType, fileName: 'x.html' })).toBe(
        'text/plain; charset=utf-8',
      );
    }
    expect(sniffContentType(Buffer.from('\ufeffhello'))).toBe('text/plain; charset=utf-8');
  });

  it('recognizes Office documents only when the zip says so', () => {
    const docx = Buffer.concat([bytes(0x50, 0x4b, 0x03, 0x04), Buffer.alloc(26), ascii('[Content_Types].xml')]);
    expect(sniffContentType(docx, { fileName: 'letter.docx' })).toBe(
      'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
    );
    expect(sniffContentType(docx, { fileName: 'letter.zip' })).toBe('application/zip');
  });
});

describe('looksLikeText', () => {
  it('accepts UTF-8 text, even cut in the middle of a character', () => {
    expect(looksLikeText(Buffer.from('héllo\twörld\r\n'))).toBe(true);
    expect(looksLikeText(Buffer.from('日本').subarray(0, 4))).toBe(true);
    expect(looksLikeText(bytes(0x68, 0x00, 0x69))).toBe(false);
    expect(looksLikeText(bytes(0xff, 0xfe))).toBe(false);
    expect(looksLikeText(bytes())).toBe(false);
  });
});
