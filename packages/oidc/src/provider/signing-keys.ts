import { createPrivateKey, createPublicKey, type KeyObject, sign } from 'node:crypto';
import type { SigningKey } from '@idt/core/knex';
import type { OidcProviderModule } from './load.js';

/** How node:crypto signs each algorithm idt keeps keys for (JWS wants raw `r || s` for ECDSA, RFC 7518 §3.4). */
const SIGN_OPTIONS = {
  ES256: { dsaEncoding: 'ieee-p1363' },
  RS256: {},
} as const;

/**
 * The provider's signing keys as oidc-provider external signing keys that
 * sign with node:crypto on the calling thread.
 *
 * oidc-provider signs through jose's WebCrypto path, which hands every
 * signature to the libuv thread pool and back (about twice the cost of the
 * signature itself for ES256). The keys, their `kid`s and the published JWKS
 * are the same; only where the signature is computed changes.
 */
export function providerSigningKeys(oidc: OidcProviderModule, keys: readonly SigningKey[]): unknown[] {
  class NodeSigningKey extends oidc.ExternalSigningKey {
    readonly #kid: string;
    readonly #alg: string;
    readonly #privateKey: KeyObject;
    readonly #publicKey: KeyObject;
    readonly #options: (typeof SIGN_OPTIONS)[keyof typeof SIGN_OPTIONS];

    constructor(key: SigningKey) {
      super();
      this.#kid = key.kid;
      this.#alg = key.alg;
      this.#privateKey = createPrivateKey({ key: key.privateJwk as never, format: 'jwk' });
      this.#publicKey = createPublicKey(this.#privateKey);
      this.#options = SIGN_OPTIONS[key.alg];
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

    override sign(data: Uint8Array): Uint8Array {
      return sign('sha256', data, { key: this.#privateKey, ...this.#options });
    }
  }
  return keys.map((key) => new NodeSigningKey(key));
}
