import { describe, expect, it } from 'vitest';
import { CookieSigner } from './cookie-signer.js';

// Signatures made by keygrip (koa's default signer) with these keys, as cookies set before idt signed them itself.
const FIRST = 'first-key-0123456789';
const SECOND = 'second-key-0123456789';
const DATA = 'idt_interaction=abc.DEF-123';
const BY_FIRST = 'epPXiNLQ0b8fBcl5ls2YvtEQCWE';
const BY_SECOND = 'ADZzr7oeDDpzW2ilDOvPudC0_hI';

describe('CookieSigner', () => {
  it("signs as keygrip does, so cookies signed before stay valid, and checks keygrip's signatures", () => {
    const signer = new CookieSigner([FIRST, SECOND]);
    expect(signer.sign(DATA)).toBe(BY_FIRST);
    expect(signer.index(DATA, BY_FIRST)).toBe(0);
    expect(signer.verify(DATA, BY_FIRST)).toBe(true);
  });

  it("verifies with any key and tells which, so koa's cookies signs again with the first", () => {
    const signer = new CookieSigner([FIRST, SECOND]);
    expect(signer.index(DATA, BY_SECOND)).toBe(1);
    expect(new CookieSigner([SECOND]).sign(DATA)).toBe(BY_SECOND);
  });

  it('refuses a changed value, a changed or cut signature, and what is not a string', () => {
    const signer = new CookieSigner([FIRST, SECOND]);
    expect(signer.index('idt_interaction=abc.DEF-124', BY_FIRST)).toBe(-1);
    expect(signer.index(DATA, `${BY_FIRST.slice(0, -1)}F`)).toBe(-1);
    expect(signer.index(DATA, BY_FIRST.slice(0, -1))).toBe(-1);
    expect(signer.index(DATA, `${BY_FIRST}=`)).toBe(-1);
    expect(signer.index(DATA, '')).toBe(-1);
    expect(signer.verify(DATA, undefined as unknown as string)).toBe(false);
    expect(new CookieSigner([SECOND]).index(DATA, BY_FIRST)).toBe(-1);
  });

  it('needs a key', () => {
    expect(() => new CookieSigner([])).toThrow(TypeError);
  });
});
