import { ProblemError, ValidationProblem } from '@idt/problem';
import { describe, expect, it } from 'vitest';
import { decodeComponent, isSafeText, parseParams, readFormBody, readJsonBody } from './body.js';

function request(body: string | Uint8Array, contentType: string) {
  return new Request('http://localhost/', { method: 'POST', body, headers: { 'content-type': contentType } });
}

async function fieldsOf(pending: Promise<unknown>): Promise<string[]> {
  const error = await pending.then(
    () => undefined,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(ValidationProblem);
  return Object.keys((error as ValidationProblem).errors ?? {});
}

describe('isSafeText', () => {
  it('refuses NUL and lone surrogates, accepts pairs', () => {
    expect(isSafeText('plain é 😀')).toBe(true);
    expect(isSafeText('a\u0000b')).toBe(false);
    expect(isSafeText('\uD800')).toBe(false);
    expect(isSafeText('x\uDC00')).toBe(false);
    expect(isSafeText('\uDBFF\uDFFF')).toBe(true);
  });
});

describe('decodeComponent', () => {
  it('decodes UTF-8 escapes and refuses NUL, invalid UTF-8 and malformed escapes', () => {
    expect(decodeComponent('a%20%C3%A9')).toBe('a é');
    for (const hostile of ['%00', 'a%FF', '%C0%AF', '%ED%A0%80', '%E2%82', '%zz']) {
      expect(decodeComponent(hostile), hostile).toBeUndefined();
    }
  });
});

describe('parseParams', () => {
  it('parses like URLSearchParams, repeated names as arrays', () => {
    expect(parseParams('?a=1&b=x+y&a=2&c&d=%C3%A9&e=100%')).toEqual({ a: ['1', '2'], b: 'x y', c: '', d: 'é', e: '100%' });
  });

  it('names the fields holding NUL or invalid UTF-8', async () => {
    expect(await fieldsOf(Promise.resolve().then(() => parseParams('ok=1&id=%00&name=%FF&x=%ED%A0%80')))).toEqual([
      'id',
      'name',
      'x',
    ]);
    expect(await fieldsOf(Promise.resolve().then(() => parseParams('%C0%AF=1')))).toEqual(['%C0%AF']);
  });
});

describe('readJsonBody', () => {
  it('names the members holding NUL or lone surrogates, keys included', async () => {
    const body = '{"name":"a\\u0000","nested":{"list":["ok","\\uD800"]},"\\u0000":1,"pair":"\\uD83D\\uDE00"}';
    expect((await fieldsOf(readJsonBody(request(body, 'application/json')))).sort()).toEqual(['', 'name', 'nested.list[1]']);
  });

  it('refuses bytes that are not UTF-8', async () => {
    const bytes = new Uint8Array([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d]);
    expect(await fieldsOf(readJsonBody(request(bytes, 'application/json')))).toEqual(['']);
  });

  it('walks deeply nested bodies without overflowing the stack', async () => {
    const deep = `${'['.repeat(200_000)}"\\u0000"${']'.repeat(200_000)}`;
    await expect(readJsonBody(request(deep, 'application/json'))).rejects.toBeInstanceOf(ValidationProblem);
  });
});

describe('readFormBody', () => {
  it('refuses NUL and invalid UTF-8 in form fields', async () => {
    expect(await fieldsOf(readFormBody(request('email=a%00b&ok=1', 'application/x-www-form-urlencoded')))).toEqual(['email']);
    expect(await readFormBody(request('email=a%40b&n=%C3%A9', 'application/x-www-form-urlencoded'))).toEqual({
      email: 'a@b',
      n: 'é',
    });
  });
});

describe('content codings', () => {
  const encoded = (encoding: string) =>
    new Request('http://localhost/', {
      method: 'POST',
      body: '{"name":"x"}',
      headers: { 'content-type': 'application/json', 'content-encoding': encoding },
    });

  it('refuses a compressed body with 415 and Accept-Encoding: identity, rather than reading it as text', async () => {
    for (const encoding of ['gzip', 'br', 'deflate', 'identity, gzip']) {
      const error = await readJsonBody(encoded(encoding)).then(
        () => undefined,
        (caught: unknown) => caught,
      );
      expect(error).toBeInstanceOf(ProblemError);
      expect(error).toMatchObject({ code: 'Http.ClientError', status: 415, headers: { 'accept-encoding': 'identity' } });
    }
  });

  it('reads a body whose coding is identity', async () => {
    expect(await readJsonBody(encoded('identity'))).toEqual({ name: 'x' });
    expect(await readJsonBody(encoded(' Identity '))).toEqual({ name: 'x' });
  });
});
