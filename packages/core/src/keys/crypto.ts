import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

const VERSION = 'v1';

/**
 * Derives a 256-bit AES key from the configured secret, one per purpose
 * (`idt-signing-keys` seals private signing keys).
 */
export function deriveKeyEncryptionKey(secret: string, purpose = 'idt-signing-keys'): Buffer {
  return Buffer.from(hkdfSync('sha256', Buffer.from(secret, 'utf8'), Buffer.from(purpose), Buffer.from(VERSION), 32));
}

/** Seals and opens secrets that must be read back (they sign or call out, so they cannot be hashed). */
export interface SecretBox {
  /** AES-256-GCM under a key of its own purpose, bound to `associatedData` (e.g. the owning row's id). */
  seal(plaintext: string, associatedData: string): string;
  /** @throws Error when the server secret differs or the value was tampered with or moved to another row. */
  open(sealed: string, associatedData: string): string;
}

/**
 * A {@link SecretBox} under the server secret (`ctx.secret`), with a key
 * derived for `purpose` alone: secrets of one purpose cannot be opened as
 * another's.
 *
 * @example
 * const box = createSecretBox(ctx.secret, 'idt-webhook-secrets');
 * const stored = box.seal('whsec_...', endpointId);
 */
export function createSecretBox(secret: string, purpose: string): SecretBox {
  const key = deriveKeyEncryptionKey(secret, purpose);
  return {
    seal: (plaintext, associatedData) => seal(plaintext, key, associatedData),
    open: (sealed, associatedData) => open(sealed, key, associatedData, purpose),
  };
}

/**
 * Seals a string with AES-256-GCM, binding it to `associatedData` (the key
 * id), as `v1.<iv>.<tag>.<ciphertext>` in base64url.
 */
export function seal(plaintext: string, key: Buffer, associatedData: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(associatedData, 'utf8'));
  const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return [VERSION, iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), ciphertext.toString('base64url')].join(
    '.',
  );
}

/**
 * Opens what {@link seal} produced.
 *
 * @throws Error when the secret is wrong or the data was tampered with.
 */
export function open(sealed: string, key: Buffer, associatedData: string, purpose = 'idt-signing-keys'): string {
  const [version, iv, tag, ciphertext] = sealed.split('.');
  if (version !== VERSION || !iv || !tag || ciphertext === undefined) throw new Error('Unrecognized sealed secret format');
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
  decipher.setAAD(Buffer.from(associatedData, 'utf8'));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  try {
    return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8');
  } catch {
    throw new Error(
      `Cannot decrypt ${purpose === 'idt-signing-keys' ? 'a signing key' : `a sealed secret (${purpose})`}: IDT_KEY_ENCRYPTION_SECRET differs from the one that encrypted it, or the value was altered`,
    );
  }
}
