import { createPrivateKey, createPublicKey, type KeyObject, type SignKeyObjectInput, sign } from 'node:crypto';
import type { SigningKey } from '@idt/core/knex';
import type { ExternalSigningKey } from 'oidc-provider';
import type { OidcProviderModule } from './load.js';

/** How node:crypto signs each algorithm idt keeps keys for (JWS wants raw `r || s` for ECDSA, RFC 7518 §3.4). */
const SIGN_OPTIONS = {
  ES256: { dsaEncoding: 'ieee-p1363' },
  RS256: {},
} as const;

/**
 * The provider's signing keys as oidc-provider external signing keys that
 * sign with node:crypto's `sign` on the libuv thread pool.
 *
 * oidc-provider would sign through jose and WebCrypto, which also compute
 * the signature on the thread pool, behind more layers (about 34 µs a
 * signature for ES256 one at a time, against 19 µs here). Off the event
 * loop, a signature (ES256 ~19 µs, RS256 ~400 µs) runs beside other
 * requests when there are cores to spare, and responses that finish
 * together go out together. Signing on the event loop instead was measured
 * at 0.78–0.85× stock oidc-provider's token rate on one core, against
 * 0.98–1.07× on the pool (docs/benchmarks-history.md, seventh pass). The keys,
 * their `kid`s and the published JWKS are the same either way.
 */
export function providerSigningKeys(oidc: OidcProviderModule, keys: readonly SigningKey[]): ExternalSigningKey[] {
  class NodeSigningKey extends oidc.ExternalSigningKey {
    readonly #kid: string;
    readonly #alg: string;
    readonly #publicKey: KeyObject;
    readonly #signWith: SignKeyObjectInput;

    constructor(key: SigningKey) {
      super();
      this.#kid = key.kid;
      this.#alg = key.alg;
      const privateKey = createPrivateKey({ key: key.privateJwk, format: 'jwk' });
      this.#publicKey = createPublicKey(privateKey);
      this.#signWith = { key: privateKey, ...SIGN_OPTIONS[key.alg] };
    }

    override get kid(): string {
      return this.#kid;
    }

    override get alg(): string {
      return this.#alg;
    }

    override keyObject(): KeyObject {
      return this.#publicKey;
    }

    override sign(data: Uint8Array): Promise<Uint8Array> {
      // With a callback, node:crypto computes the signature on the libuv thread pool.
      return new Promise((resolve, reject) => {
        sign('sha256', data, this.#signWith, (error, signature) => (error ? reject(error) : resolve(signature)));
      });
    }
  }
  return keys.map((key) => new NodeSigningKey(key));
}
