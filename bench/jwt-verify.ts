/**
 * Access-token verification on node:crypto against jose, in one process, so
 * both paths see the same machine at the same moment (issue 48: jose unless
 * it costs bearer reads more than 5 %).
 *
 * Both paths verify the same access tokens (what idt issues: ES256, and
 * RS256 for the keys it also keeps) with the same checks: `typ` at+jwt,
 * algorithm allow-list, key id, signature, issuer, audience, subject, and
 * expiry, not-before and issued-at with five minutes of skew.
 *
 * - `node:crypto`: the key imported once with `createPublicKey`, each token
 *   split, decoded and verified with the synchronous `verify` (the per-token
 *   work of `createJwtVerifier`);
 * - `jose`: the key imported once with `importJWK`, each token verified with
 *   `jwtVerify` (WebCrypto `subtle.verify`, on the libuv thread pool);
 * - `node:crypto (pool)`: node:crypto's `verify` in its callback form, on
 *   the thread pool like WebCrypto, to tell jose's own cost from the pool's;
 * - `createJwtVerifier`: the verifier @idt/core ships, whichever of the two
 *   it is built on, for reference.
 *
 * Every token is verified once per round, so no verifier cache answers; a
 * bearer read of a token seen before is served from the verifier's cache
 * (`cached(token)`, the same code on either path), which the last line
 * measures. Rounds alternate between the paths and the median round counts,
 * which keeps a busy shared machine from favouring whichever ran first.
 * `sequential` awaits one token at a time (one request's latency);
 * `concurrent` keeps 32 verifications in flight (a burst of new tokens).
 *
 *   node --import tsx bench/jwt-verify.ts [--tokens 2000] [--rounds 7] [--json]
 */
import { createPublicKey, generateKeyPairSync, type JsonWebKey, type KeyObject, verify } from 'node:crypto';
import { parseArgs } from 'node:util';
import { importJWK, jwtVerify } from 'jose';
import { createJwtVerifier, signJwt } from '../packages/core/src/auth/jwt.js';

const { values: args } = parseArgs({
  options: {
    tokens: { type: 'string', default: '2000' },
    rounds: { type: 'string', default: '7' },
    json: { type: 'boolean', default: false },
  },
});
const TOKENS = Number(args.tokens);
const ROUNDS = Number(args.rounds);
const CONCURRENCY = 32;
const ISSUER = 'https://id.example.com/idt';
const AUDIENCE = 'https://api.example.com';
const TOLERANCE = 300;

type Alg = 'ES256' | 'RS256';
type Verify = (token: string) => Promise<unknown>;

function keyPair(alg: Alg) {
  const { privateKey } =
    alg === 'ES256' ? generateKeyPairSync('ec', { namedCurve: 'P-256' }) : generateKeyPairSync('rsa', { modulusLength: 2048 });
  const privateJwk = { ...privateKey.export({ format: 'jwk' }), kid: `${alg.toLowerCase()}-1`, alg };
  const { d: _d, p: _p, q: _q, dp: _dp, dq: _dq, qi: _qi, ...publicJwk } = privateJwk;
  return { privateJwk, publicJwk };
}

function tokensFor(privateJwk: JsonWebKey & { kid: string; alg: string }): string[] {
  const now = Math.floor(Date.now() / 1000);
  return Array.from({ length: TOKENS }, (_, index) =>
    signJwt(
      { typ: 'at+jwt' },
      {
        iss: ISSUER,
        sub: '0197a3c2-1b4e-7c55-9d3f-1a2b3c4d5e6f',
        aud: AUDIENCE,
        iat: now,
        exp: now + 900,
        jti: `token-${index}`,
        client_id: 'bench-client',
        scope: 'openid profile email api',
        org_id: '0197a3c2-1b4e-7c55-9d3f-6f5e4d3c2b1a',
        sid: `session-${index}`,
      },
      privateJwk,
    ),
  );
}

function decode(segment: string): Record<string, unknown> {
  if (!/^[A-Za-z0-9_-]+$/.test(segment)) throw new Error('malformed');
  const value: unknown = JSON.parse(Buffer.from(segment, 'base64url').toString('utf8'));
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error('malformed');
  return value as Record<string, unknown>;
}

function checkClaims(claims: Record<string, unknown>): void {
  const now = Math.floor(Date.now() / 1000);
  if (claims.iss !== ISSUER) throw new Error('wrong_issuer');
  const aud = Array.isArray(claims.aud) ? claims.aud : [claims.aud];
  if (!aud.includes(AUDIENCE)) throw new Error('wrong_audience');
  if (typeof claims.sub !== 'string' || claims.sub === '') throw new Error('malformed');
  if (typeof claims.exp !== 'number' || now - TOLERANCE >= claims.exp) throw new Error('expired');
  if (typeof claims.nbf === 'number' && claims.nbf > now + TOLERANCE) throw new Error('not_yet_valid');
  if (typeof claims.iat === 'number' && claims.iat > now + TOLERANCE) throw new Error('not_yet_valid');
}

/** The node:crypto path: the per-token work of createJwtVerifier. */
function nodeCryptoPath(publicJwk: JsonWebKey & { kid: string; alg: string }): Verify {
  const keys = new Map<string, { alg: string; key: KeyObject }>([
    [publicJwk.kid, { alg: publicJwk.alg, key: createPublicKey({ key: publicJwk, format: 'jwk' }) }],
  ]);
  return async (token) => {
    const parts = token.split('.');
    if (parts.length !== 3) throw new Error('malformed');
    const [headerPart, payloadPart, signaturePart] = parts as [string, string, string];
    const header = decode(headerPart);
    if (typeof header.alg !== 'string' || (header.alg !== 'ES256' && header.alg !== 'RS256')) throw new Error('alg');
    if (typeof header.typ !== 'string' || header.typ.toLowerCase().replace(/^application\//, '') !== 'at+jwt')
      throw new Error('typ');
    if (header.crit !== undefined || typeof header.kid !== 'string') throw new Error('header');
    const key = keys.get(header.kid);
    if (!key || key.alg !== header.alg) throw new Error('unknown_key');
    if (!/^[A-Za-z0-9_-]*$/.test(signaturePart)) throw new Error('malformed');
    const data = Buffer.from(`${headerPart}.${payloadPart}`, 'ascii');
    const signature = Buffer.from(signaturePart, 'base64url');
    const ok =
      header.alg === 'ES256'
        ? verify('sha256', data, { key: key.key, dsaEncoding: 'ieee-p1363' }, signature)
        : verify('sha256', data, key.key, signature);
    if (!ok) throw new Error('bad_signature');
    const claims = decode(payloadPart);
    checkClaims(claims);
    return claims;
  };
}

/** The node:crypto path with the signature checked on the libuv thread pool (verify's callback form), for comparison. */
function nodeCryptoPoolPath(publicJwk: JsonWebKey & { kid: string; alg: string }): Verify {
  const key = createPublicKey({ key: publicJwk, format: 'jwk' });
  const keyInput = publicJwk.alg === 'ES256' ? { key, dsaEncoding: 'ieee-p1363' as const } : key;
  return async (token) => {
    const [headerPart = '', payloadPart = '', signaturePart = ''] = token.split('.');
    const header = decode(headerPart);
    if (header.kid !== publicJwk.kid || header.alg !== publicJwk.alg) throw new Error('unknown_key');
    const data = Buffer.from(`${headerPart}.${payloadPart}`, 'ascii');
    const ok = await new Promise<boolean>((resolve, reject) =>
      verify('sha256', data, keyInput, Buffer.from(signaturePart, 'base64url'), (error, result) =>
        error ? reject(error) : resolve(result),
      ),
    );
    if (!ok) throw new Error('bad_signature');
    const claims = decode(payloadPart);
    checkClaims(claims);
    return claims;
  };
}

/** The jose path: importJWK once, jwtVerify per token, with the same checks. */
async function josePath(publicJwk: JsonWebKey & { kid: string; alg: string }): Promise<Verify> {
  const keys = new Map([[publicJwk.kid, { alg: publicJwk.alg, key: await importJWK({ ...publicJwk }, publicJwk.alg) }]]);
  return async (token) => {
    const { payload } = await jwtVerify(
      token,
      (header) => {
        const key = header.kid === undefined ? undefined : keys.get(header.kid);
        if (!key || key.alg !== header.alg) throw new Error('unknown_key');
        return key.key;
      },
      {
        algorithms: ['ES256', 'RS256'],
        typ: 'at+jwt',
        issuer: ISSUER,
        audience: AUDIENCE,
        clockTolerance: TOLERANCE,
        requiredClaims: ['sub', 'exp'],
      },
    );
    return payload;
  };
}

/** The verifier @idt/core ships; a cache of one entry, so distinct tokens are all verified. */
function shippedPath(publicJwk: JsonWebKey & { kid: string; alg: string }): Verify {
  const verifier = createJwtVerifier({ keys: async () => [publicJwk], issuer: ISSUER, audience: AUDIENCE, cacheSize: 1 });
  return (token) => verifier.verify(token);
}

async function sequential(run: Verify, tokens: readonly string[]): Promise<number> {
  const started = process.hrtime.bigint();
  for (const token of tokens) await run(token);
  return tokens.length / (Number(process.hrtime.bigint() - started) / 1e9);
}

async function concurrent(run: Verify, tokens: readonly string[]): Promise<number> {
  const started = process.hrtime.bigint();
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < tokens.length) {
        const token = tokens[next++] as string;
        await run(token);
      }
    }),
  );
  return tokens.length / (Number(process.hrtime.bigint() - started) / 1e9);
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? 0;
}

const results: Record<string, Record<string, number>> = {};
for (const alg of ['ES256', 'RS256'] as const) {
  const { privateJwk, publicJwk } = keyPair(alg);
  const tokens = tokensFor(privateJwk);
  const paths: Record<string, Verify> = {
    'node:crypto': nodeCryptoPath(publicJwk),
    jose: await josePath(publicJwk),
    'node:crypto (pool)': nodeCryptoPoolPath(publicJwk),
    createJwtVerifier: shippedPath(publicJwk),
  };
  for (const mode of ['sequential', 'concurrent'] as const) {
    const measure = mode === 'sequential' ? sequential : concurrent;
    // One warm-up pass per path, then alternating rounds.
    for (const run of Object.values(paths)) await measure(run, tokens.slice(0, 200));
    const samples: Record<string, number[]> = Object.fromEntries(Object.keys(paths).map((name) => [name, []]));
    for (let round = 0; round < ROUNDS; round++) {
      for (const [name, run] of Object.entries(paths)) samples[name]?.push(await measure(run, tokens));
    }
    const row: Record<string, number> = {};
    for (const [name, values] of Object.entries(samples)) row[name] = Math.round(median(values));
    const nodeRate = row['node:crypto'] ?? 0;
    const joseRate = row.jose ?? 0;
    row['jose cost %'] = Math.round((nodeRate / joseRate - 1) * 1000) / 10;
    results[`${alg} ${mode}`] = row;
  }
}

// A bearer read of a token seen before: the verifier's cache, no signature.
{
  const { privateJwk, publicJwk } = keyPair('ES256');
  const token = tokensFor(privateJwk)[0] as string;
  const verifier = createJwtVerifier({ keys: async () => [publicJwk], issuer: ISSUER, audience: AUDIENCE });
  await verifier.verify(token);
  const hits = 200_000;
  const started = process.hrtime.bigint();
  for (let index = 0; index < hits; index++) verifier.cached(token);
  results['cached read'] = { 'createJwtVerifier.cached': Math.round(hits / (Number(process.hrtime.bigint() - started) / 1e9)) };
}

if (args.json) {
  console.log(JSON.stringify({ node: process.version, tokens: TOKENS, rounds: ROUNDS, results }, null, 2));
} else {
  console.log(`node ${process.version}, ${TOKENS} distinct tokens a round, median of ${ROUNDS} rounds, verifications/s`);
  console.log('("jose cost %": how much longer jose takes than node:crypto for the same tokens; negative = jose faster)');
  console.table(results);
}
