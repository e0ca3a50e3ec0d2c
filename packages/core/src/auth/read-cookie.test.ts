import { describe, expect, it } from 'vitest';
import { readCookie } from './authenticator.js';

describe('readCookie', () => {
  it('reads the first cookie of a name, unquoted and percent-decoded, and nothing else', () => {
    const header = 'a=1; idt_session=abc; idt_session=second; quoted="Fe26.2*1*x"; encoded=a%20b; bad=%E0%A4%A';
    expect(readCookie(header, 'idt_session')).toBe('abc');
    expect(readCookie(header, 'quoted')).toBe('Fe26.2*1*x');
    expect(readCookie(header, 'encoded')).toBe('a b');
    expect(readCookie(header, 'bad')).toBe('%E0%A4%A');
    expect(readCookie(header, 'idt')).toBeUndefined();
    expect(readCookie(null, 'a')).toBeUndefined();
    expect(readCookie('lonely', 'lonely')).toBeUndefined();
  });
});
