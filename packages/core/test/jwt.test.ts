import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createManualClock } from '../src/clock.js';
import { createJwtVerifier, JwtError, signJwt } from '../src/index.js';

function key(alg: 'ES256' | 'RS256', kid: string) {
  const { privateKey } =
    alg === 'ES256' ? generateKeyPairSync('ec', { namedCurve: 'P-256' }) : generateKeyPairSync('rsa', { modulusLength: 2048 });
  const privateJwk = { ...privateKey.export({ format: 'jwk' }), kid, alg };
  const { d: _d, p: _p, q: _q, dp: _dp, dq: _dq, qi: _qi, ...publicJwk } = privateJwk;
  return { privateJwk, publicJwk };
}

const es = key('ES256', 'es-1');
const rs = key('RS256', 'rs-1');
const issuer = 'https://id.example.com/idt';
const clock = createManualClock('2030-01-01T00:00:00Z');
const now = Math.floor(clock.now().getTime() / 1000);
const claims = { iss: issuer, sub: 'user-1', aud: 'https://id.example.com/idt', iat: now, exp: now + 900, org_id: 'org-1' };

function verifier(keys = [es.publicJwk, rs.publicJwk]) {
  let loads = 0;
  const instance = createJwtVerifier({
    keys: async () => {
      loads += 1;
      return keys;
    },
    issuer,
    audience: 'https://id.example.com/idt',
    clock,
    keyReloadIntervalMs: 0,
  });
  return { instance, loads: () => loads };
}

async function reason(promise: Promise<unknown>) {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(JwtError);
    return (error as JwtError).reason;
  }
  throw new Error('expected a JwtError');
}

describe('JWT verification', () => {
  it('verifies ES256 and RS256 access tokens', async () => {
    const { instance } = verifier();
    await expect(instance.verify(signJwt({ typ: 'at+jwt' }, claims, es.privateJwk))).resolves.toMatchObject({ sub: 'user-1' });
    await expect(instance.verify(signJwt({ typ: 'at+jwt' }, claims, rs.privateJwk))).resolves.toMatchObject({ org_id: 'org-1' });
    await expect(instance.verify(signJwt({ typ: 'application/at+jwt' }, claims, es.privateJwk))).resolves.toBeTruthy();
  });

  it('refuses id tokens and other types', async () => {
    expect(await reason(verifier().instance.verify(signJwt({ typ: 'JWT' }, claims, es.privateJwk)))).toBe('wrong_type');
    expect(await reason(verifier().instance.verify(signJwt({}, claims, es.privateJwk)))).toBe('wrong_type');
  });

  it('refuses a tampered payload or signature', async () => {
    const token = signJwt({ typ: 'at+jwt' }, claims, es.privateJwk);
    const [h, , s] = token.split('.');
    const forged = `${h}.${Buffer.from(JSON.stringify({ ...claims, sub: 'admin' })).toString('base64url')}.${s}`;
    expect(await reason(verifier().instance.verify(forged))).toBe('bad_signature');
    expect(await reason(verifier().instance.verify(`${token.slice(0, -4)}AAAA`))).toBe('bad_signature');
  });

  it('refuses alg none, HS256 and unknown keys', async () => {
    const none = `${Buffer.from(JSON.stringify({ alg: 'none', typ: 'at+jwt' })).toString('base64url')}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.`;
    expect(await reason(verifier().instance.verify(none))).toBe('unsupported_algorithm');
    const hs = `${Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'at+jwt', kid: 'es-1' })).toString('base64url')}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.abc`;
    expect(await reason(verifier().instance.verify(hs))).toBe('unsupported_algorithm');
    const stranger = key('ES256', 'stranger');
    expect(await reason(verifier().instance.verify(signJwt({ typ: 'at+jwt' }, claims, stranger.privateJwk)))).toBe('unknown_key');
    const mismatched = key('ES256', 'rs-1');
    expect(await reason(verifier().instance.verify(signJwt({ typ: 'at+jwt' }, claims, mismatched.privateJwk)))).toBe(
      'unknown_key',
    );
  });

  it('checks issuer and audience', async () => {
    expect(
      await reason(verifier().instance.verify(signJwt({ typ: 'at+jwt' }, { ...claims, iss: 'https://evil' }, es.privateJwk))),
    ).toBe('wrong_issuer');
    expect(await reason(verifier().instance.verify(signJwt({ typ: 'at+jwt' }, { ...claims, aud: 'other' }, es.privateJwk)))).toBe(
      'wrong_audience',
    );
    await expect(
      verifier().instance.verify(
        signJwt({ typ: 'at+jwt' }, { ...claims, aud: ['other', 'https://id.example.com/idt'] }, es.privateJwk),
      ),
    ).resolves.toBeTruthy();
  });

  it('tolerates five minutes of clock skew and no more', async () => {
    const { instance } = verifier();
    const justExpired = signJwt({ typ: 'at+jwt' }, { ...claims, exp: now - 299 }, es.privateJwk);
    await expect(instance.verify(justExpired)).resolves.toBeTruthy();
    const expired = signJwt({ typ: 'at+jwt' }, { ...claims, exp: now - 301 }, es.privateJwk);
    expect(await reason(instance.verify(expired))).toBe('expired');
    const future = signJwt({ typ: 'at+jwt' }, { ...claims, nbf: now + 400 }, es.privateJwk);
    expect(await reason(instance.verify(future))).toBe('not_yet_valid');
    const slightlyFuture = signJwt({ typ: 'at+jwt' }, { ...claims, iat: now + 200, nbf: now + 200 }, es.privateJwk);
    await expect(instance.verify(slightlyFuture)).resolves.toBeTruthy();
  });

  it('caches verified tokens but still expires them', async () => {
    const local = createManualClock(clock.now());
    const instance = createJwtVerifier({ keys: async () => [es.publicJwk], issuer, audience: claims.aud, clock: local });
    const token = signJwt({ typ: 'at+jwt' }, claims, es.privateJwk);
    await instance.verify(token);
    await instance.verify(token);
    local.advance((900 + 301) * 1000);
    expect(await reason(instance.verify(token))).toBe('expired');
  });

  it('reloads keys when an unknown key id appears (after a rotation)', async () => {
    const keys = [es.publicJwk];
    const { instance, loads } = verifier(keys);
    await instance.verify(signJwt({ typ: 'at+jwt' }, claims, es.privateJwk));
    expect(loads()).toBe(1);
    keys.push(rs.publicJwk);
    await expect(instance.verify(signJwt({ typ: 'at+jwt' }, claims, rs.privateJwk))).resolves.toBeTruthy();
    expect(loads()).toBe(2);
  });

  it('refuses malformed tokens', async () => {
    for (const token of ['', 'a.b', 'a.b.c.d', '!!.??.--', `${Buffer.from('[]').toString('base64url')}.e30.`]) {
      expect(await reason(verifier().instance.verify(token))).toMatch(/malformed|unsupported_algorithm/);
    }
  });
});
