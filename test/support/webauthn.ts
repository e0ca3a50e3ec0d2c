import { createHash, generateKeyPairSync, type KeyObject, randomBytes, sign } from 'node:crypto';
import { isoCBOR } from '@simplewebauthn/server/helpers';

/** The JSON a browser's `credential.toJSON()` answers, as the tests post it. */
export type CredentialJson = {
  id: string;
  rawId: string;
  type: 'public-key';
  response: Record<string, unknown>;
  clientExtensionResults: Record<string, unknown>;
  authenticatorAttachment?: string;
};

/** What the ceremony claims besides the options (to forge a wrong origin, a missing UV, ...). */
export interface CeremonyOverrides {
  readonly origin?: string;
  readonly rpId?: string;
  readonly challenge?: string;
  readonly userVerified?: boolean;
  /** The signature counter to report (an authenticator adds one per use by default). */
  readonly counter?: number;
}

const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64url');
const sha256 = (data: Uint8Array | string) => createHash('sha256').update(data).digest();

/** A stored credential of the software authenticator. */
interface SoftCredential {
  readonly id: Uint8Array;
  readonly privateKey: KeyObject;
  readonly cose: Uint8Array;
  readonly userHandle: string;
  counter: number;
}

/**
 * A software WebAuthn authenticator (ES256, `none` attestation) for tests
 * without a browser: it builds the authenticator data, attestation object
 * and client data a browser would, and signs with a real P-256 key, so the
 * server's `@simplewebauthn/server` verification runs unchanged. The origin
 * it puts in the client data is whatever the test says (a browser would put
 * the page's).
 */
export class SoftAuthenticator {
  readonly #credentials: SoftCredential[] = [];
  readonly #origin: string;
  readonly #backedUp: boolean;

  constructor(origin: string, options: { backedUp?: boolean } = {}) {
    this.#origin = origin;
    this.#backedUp = options.backedUp ?? false;
  }

  #flags(userVerified: boolean, attested: boolean): number {
    let flags = 0x01; // UP
    if (userVerified) flags |= 0x04;
    if (this.#backedUp) flags |= 0x08 | 0x10; // BE, BS
    if (attested) flags |= 0x40;
    return flags;
  }

  #clientData(type: string, challenge: string, overrides: CeremonyOverrides): Buffer {
    return Buffer.from(
      JSON.stringify({
        type,
        challenge: overrides.challenge ?? challenge,
        origin: overrides.origin ?? this.#origin,
        crossOrigin: false,
      }),
    );
  }

  /** `navigator.credentials.create()` for creation options (JSON), answered as `toJSON()` would. */
  create(
    options: { challenge: string; rp: { id?: string }; user: { id: string } },
    overrides: CeremonyOverrides = {},
  ): CredentialJson {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const jwk = publicKey.export({ format: 'jwk' });
    const cose = isoCBOR.encode(
      new Map<number, number | Uint8Array>([
        [1, 2],
        [3, -7],
        [-1, 1],
        [-2, Buffer.from(jwk.x as string, 'base64url')],
        [-3, Buffer.from(jwk.y as string, 'base64url')],
      ]),
    );
    const id = randomBytes(16);
    const credential: SoftCredential = { id, privateKey, cose, userHandle: options.user.id, counter: 0 };
    const rpId = overrides.rpId ?? options.rp.id ?? '';
    const idLength = Buffer.alloc(2);
    idLength.writeUInt16BE(id.length);
    const authData = Buffer.concat([
      sha256(rpId),
      Buffer.from([this.#flags(overrides.userVerified ?? true, true)]),
      Buffer.alloc(4), // signCount 0
      Buffer.alloc(16), // AAGUID (zeros: private)
      idLength,
      id,
      cose,
    ]);
    const attestationObject = isoCBOR.encode(
      // tiny-cbor's value type: an empty map for `attStmt` (`none` attestation).
      new Map<string, unknown>([
        ['fmt', 'none'],
        ['attStmt', new Map()],
        ['authData', new Uint8Array(authData)],
      ]) as Parameters<typeof isoCBOR.encode>[0],
    );
    this.#credentials.push(credential);
    return {
      id: b64(id),
      rawId: b64(id),
      type: 'public-key',
      response: {
        clientDataJSON: b64(this.#clientData('webauthn.create', options.challenge, overrides)),
        attestationObject: b64(attestationObject),
        transports: ['internal'],
      },
      clientExtensionResults: {},
      authenticatorAttachment: 'platform',
    };
  }

  /**
   * `navigator.credentials.get()` for request options (JSON): the first
   * credential allowed (or `which`, or the newest for a discoverable request).
   */
  get(
    options: { challenge: string; rpId?: string; allowCredentials?: Array<{ id: string }> },
    overrides: CeremonyOverrides & { which?: string } = {},
  ): CredentialJson {
    const allowed = options.allowCredentials?.map((entry) => entry.id);
    const candidates = this.#credentials.filter((entry) => !allowed?.length || allowed.includes(b64(entry.id)));
    const credential = overrides.which
      ? this.#credentials.find((entry) => b64(entry.id) === overrides.which)
      : candidates[candidates.length - 1];
    if (!credential) throw new Error('NotAllowedError: no credential for this request');
    credential.counter = overrides.counter ?? credential.counter + 1;
    const counter = Buffer.alloc(4);
    counter.writeUInt32BE(credential.counter);
    const authData = Buffer.concat([
      sha256(overrides.rpId ?? options.rpId ?? ''),
      Buffer.from([this.#flags(overrides.userVerified ?? true, false)]),
      counter,
    ]);
    const clientData = this.#clientData('webauthn.get', options.challenge, overrides);
    const signature = sign('sha256', Buffer.concat([authData, sha256(clientData)]), credential.privateKey);
    return {
      id: b64(credential.id),
      rawId: b64(credential.id),
      type: 'public-key',
      response: {
        clientDataJSON: b64(clientData),
        authenticatorData: b64(authData),
        signature: b64(signature),
        userHandle: credential.userHandle,
      },
      clientExtensionResults: {},
      authenticatorAttachment: 'platform',
    };
  }
}
