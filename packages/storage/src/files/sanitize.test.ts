import { describe, expect, it } from 'vitest';
import { contentDisposition, sanitizeFileName, sanitizePath } from './sanitize.js';

describe('sanitizeFileName', () => {
  it.each([
    ['report.pdf', 'report.pdf'],
    ['../../etc/passwd', 'passwd'],
    ['C:\\Users\\ada\\notes.txt', 'notes.txt'],
    ['/absolute/path.txt', 'path.txt'],
    ['a\u0000b\u0007c\u001b.txt', 'abc.txt'],
    ['evil\u202egnp.exe', 'evilgnp.exe'],
    ['zero\u200bwidth.txt', 'zerowidth.txt'],
    ['  spaced   out  .txt  ', 'spaced out .txt'],
    ['.htaccess', 'htaccess'],
    ['..', 'file'],
    ['', 'file'],
    [undefined, 'file'],
    ['trailing dots...', 'trailing dots'],
    ['a<b>c:d"e|f?g*h.txt', 'a_b_c_d_e_f_g_h.txt'],
    ['Cafe\u0301.txt', 'Café.txt'],
  ])('%j → %j', (raw, expected) => {
    expect(sanitizeFileName(raw)).toBe(expected);
  });

  it('keeps at most 255 characters and the extension', () => {
    const long = sanitizeFileName(`${'x'.repeat(400)}.tar.gz`);
    expect(Array.from(long)).toHaveLength(255);
    expect(long.endsWith('.gz')).toBe(true);
    expect(Array.from(sanitizeFileName('😀'.repeat(300)))).toHaveLength(255);
  });
});

describe('sanitizePath', () => {
  it.each([
    [undefined, null],
    ['', null],
    ['/', null],
    ['../..', null],
    ['reports/2024', 'reports/2024'],
    ['/reports//2024/', 'reports/2024'],
    ['../../etc', 'etc'],
    ['a/./b/../c', 'a/b/c'],
    ['a\\b\\..\\c', 'a/b/c'],
    ['x\u0000y/\u0007z', 'xy/z'],
    ['...hidden/.git', 'hidden/git'],
  ])('%j → %j', (raw, expected) => {
    expect(sanitizePath(raw)).toBe(expected);
  });

  it('keeps whole segments up to 1024 characters', () => {
    const path = sanitizePath(Array.from({ length: 100 }, () => 'segment-of-20-chars!').join('/')) as string;
    expect(path.length).toBeLessThanOrEqual(1024);
    expect(path.split('/').every((segment) => segment === 'segment-of-20-chars!')).toBe(true);
  });
});

describe('contentDisposition', () => {
  it('gives an ASCII fallback and the exact name per RFC 8187', () => {
    expect(contentDisposition('report.pdf')).toBe(`attachment; filename="report.pdf"; filename*=UTF-8''report.pdf`);
    expect(contentDisposition('Résumé 100%.pdf')).toBe(
      `attachment; filename="Resume 100_.pdf"; filename*=UTF-8''R%C3%A9sum%C3%A9%20100%25.pdf`,
    );
    expect(contentDisposition('日本語.txt')).toBe(
      `attachment; filename="___.txt"; filename*=UTF-8''%E6%97%A5%E6%9C%AC%E8%AA%9E.txt`,
    );
    expect(contentDisposition('x\r\nSet-Cookie: a=b')).not.toMatch(/[\r\n]/);
  });
});
