import { createHash, generateKeyPair, type JsonWebKey } from 'node:crypto';
import { promisify } from 'node:util';
import type { Knex } from 'knex';
import { type Clock, systemClock } from '../clock.js';
import { toIso, toIsoOrNull } from '../db/database.js';
import { isUniqueViolation } from '../db/errors.js';
import { deriveKeyEncryptionKey, open, seal } from './crypto.js';

const generateKeyPairAsync = promisify(generateKeyPair);

/** The JWS algorithms idt signs with: ES256 (the default, fast) and RS256 (what OpenID Connect requires every provider to offer). */
export type SigningAlgorithm = 'ES256' | 'RS256';

/** Every algorithm idt keeps an active key for. */
export const SIGNING_ALGORITHMS: readonly SigningAlgorithm[] = ['ES256', 'RS256'];

/** A public JWK as published in the JWKS. */
export type PublicJwk = JsonWebKey & { kid: string; alg: SigningAlgorithm; use: 'sig'; kty: string };

/** A signing key with its private part (decrypted, in memory only). */
export interface SigningKey {
  readonly kid: string;
  readonly alg: SigningAlgorithm;
  /** `active` keys sign; `retired` keys only verify until `expiresAt`. */
  readonly status: 'active' | 'retired';
  readonly publicJwk: PublicJwk;
  readonly privateJwk: JsonWebKey & { kid: string; alg: SigningAlgorithm; use: 'sig' };
  readonly createdAt: string;
  readonly retiredAt: string | null;
  /** When a retired key stops being published and accepted. */
  readonly expiresAt: string | null;
}

/** Persistence and lifecycle of signing keys. */
export interface SigningKeyStore {
  /**
   * Makes sure one active key exists per algorithm, generating what is
   * missing. Safe when several instances start at once: one generated key
   * wins per algorithm, the others are discarded.
   */
  ensureActiveKeys(algorithms?: readonly SigningAlgorithm[]): Promise<SigningKey[]>;
  /** Active keys, then retired keys that have not expired; newest first within each. */
  listKeys(): Promise<SigningKey[]>;
  /**
   * Retires the active key of `alg` (it keeps verifying for the retention
   * period) and activates a new one, in one transaction.
   */
  rotate(alg: SigningAlgorithm): Promise<SigningKey>;
  /** Deletes retired keys past their expiry; returns how many. */
  prune(): Promise<number>;
}

/** Options of {@link createKnexSigningKeyStore}. */
export interface SigningKeyStoreOptions {
  readonly db: Knex;
  /** The key-encryption secret (see `resolveKeyEncryptionSecret`). */
  readonly secret: string;
  readonly clock?: Clock;
  /**
   * How long a retired key keeps verifying, in seconds: at least the longest
   * lifetime of a token it signed. Default 86,400 (one day).
   */
  readonly retentionSeconds?: number;
}

/** The RFC 7638 thumbprint of a public JWK, base64url: used as the key id. */
export function jwkThumbprint(jwk: JsonWebKey): string {
  const members =
    jwk.kty === 'EC'
      ? { crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y }
      : jwk.kty === 'RSA'
        ? { e: jwk.e, kty: jwk.kty, n: jwk.n }
        : { crv: jwk.crv, kty: jwk.kty, x: jwk.x };
  return createHash('sha256').update(JSON.stringify(members)).digest('base64url');
}

async function generateSigningJwk(alg: SigningAlgorithm) {
  const { privateKey } =
    alg === 'ES256'
      ? await generateKeyPairAsync('ec', { namedCurve: 'P-256' })
      : await generateKeyPairAsync('rsa', { modulusLength: 2048, publicExponent: 0x10001 });
  const privateJwk = privateKey.export({ format: 'jwk' });
  const kid = jwkThumbprint(privateJwk);
  return { kid, privateJwk: { ...privateJwk, kid, alg, use: 'sig' as const } };
}

function publicPart(privateJwk: SigningKey['privateJwk']): PublicJwk {
  const { kty, crv, x, y, n, e, kid, alg, use } = privateJwk;
  const jwk: Record<string, unknown> = { kty, kid, alg, use };
  if (kty === 'EC') Object.assign(jwk, { crv, x, y });
  else Object.assign(jwk, { n, e });
  return jwk as PublicJwk;
}

interface KeyRow {
  kid: string;
  alg: string;
  status: string;
  public_jwk: string;
  private_jwk_sealed: string;
  created_at: unknown;
  retired_at: unknown;
  expires_at: unknown;
}

/**
 * The knex signing-key store. Private keys are sealed with AES-256-GCM under
 * a key derived from the configured secret, bound to their key id.
 *
 * @example
 * const keys = createKnexSigningKeyStore({ db, secret: resolveKeyEncryptionSecret(config) });
 * await keys.ensureActiveKeys();
 * const jwks = publicJwks(await keys.listKeys());
 */
export function createKnexSigningKeyStore(options: SigningKeyStoreOptions): SigningKeyStore {
  const { db } = options;
  const clock = options.clock ?? systemClock;
  const retentionMs = (options.retentionSeconds ?? 86_400) * 1000;
  const encryptionKey = deriveKeyEncryptionKey(options.secret);

  const toKey = (row: KeyRow): SigningKey => {
    const privateJwk = JSON.parse(open(row.private_jwk_sealed, encryptionKey, row.kid)) as SigningKey['privateJwk'];
    return {
      kid: row.kid,
      alg: row.alg as SigningAlgorithm,
      status: row.status as SigningKey['status'],
      publicJwk: JSON.parse(row.public_jwk) as PublicJwk,
      privateJwk,
      createdAt: toIso(row.created_at),
      retiredAt: toIsoOrNull(row.retired_at),
      expiresAt: toIsoOrNull(row.expires_at),
    };
  };

  const rowFor = async (alg: SigningAlgorithm, now: string) => {
    const { kid, privateJwk } = await generateSigningJwk(alg);
    return {
      kid,
      alg,
      status: 'active',
      public_jwk: JSON.stringify(publicPart(privateJwk)),
      private_jwk_sealed: seal(JSON.stringify(privateJwk), encryptionKey, kid),
      created_at: now,
      retired_at: null,
      expires_at: null,
    };
  };

  async function listKeys(): Promise<SigningKey[]> {
    const now = clock.now().toISOString();
    const rows = (await db('core_signing_keys')
      .where('status', 'active')
      .orWhere((q) => q.where('status', 'retired').andWhere('expires_at', '>', now))
      .orderBy([
        { column: 'status', order: 'asc' },
        { column: 'created_at', order: 'desc' },
      ])) as KeyRow[];
    return rows.map(toKey);
  }

  async function ensureActiveKeys(algorithms: readonly SigningAlgorithm[] = SIGNING_ALGORITHMS): Promise<SigningKey[]> {
    const existing = await listKeys();
    for (const alg of algorithms) {
      if (existing.some((key) => key.alg === alg && key.status === 'active')) continue;
      try {
        await db('core_signing_keys').insert(await rowFor(alg, clock.now().toISOString()));
      } catch (error) {
        if (!isUniqueViolation(error)) throw error;
      }
    }
    return listKeys();
  }

  async function rotate(alg: SigningAlgorithm): Promise<SigningKey> {
    const now = clock.now();
    const row = await rowFor(alg, now.toISOString());
    await db.transaction(async (trx) => {
      await trx('core_signing_keys')
        .where({ alg, status: 'active' })
        .update({
          status: 'retired',
          retired_at: now.toISOString(),
          expires_at: new Date(now.getTime() + retentionMs).toISOString(),
        });
      await trx('core_signing_keys').insert(row);
    });
    const created = (await listKeys()).find((key) => key.kid === row.kid);
    if (!created) throw new Error(`Rotated key ${row.kid} was not found`);
    return created;
  }

  async function prune(): Promise<number> {
    return db('core_signing_keys').where('status', 'retired').andWhere('expires_at', '<=', clock.now().toISOString()).delete();
  }

  return { ensureActiveKeys, listKeys, rotate, prune };
}

/** The public JWKS of a key list: what `/.well-known/jwks.json` serves. */
export function publicJwks(keys: readonly SigningKey[]): { keys: PublicJwk[] } {
  return { keys: keys.map((key) => key.publicJwk) };
}
