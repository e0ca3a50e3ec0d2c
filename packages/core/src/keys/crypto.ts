import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

const VERSION = 'v1';

/** Derives the 256-bit AES key that seals private signing keys from the configured secret. */
export function deriveKeyEncryptionKey(secret: string): Buffer {
  return Buffer.from(hkdfSync('sha256', Buffer.from(secret, 'utf8'), Buffer.from('idt-signing-keys'), Buffer.from(VERSION), 32));
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
export function open(sealed: string, key: Buffer, associatedData: string): string {
  const [version, iv, tag, ciphertext] = sealed.split('.');
  if (version !== VERSION || !iv || !tag || ciphertext === undefined) throw new Error('Unrecognized sealed key format');
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
  decipher.setAAD(Buffer.from(associatedData, 'utf8'));
  decipher.setAuthTag(Buffer.from(tag, 'base64url'));
  try {
    return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64url')), decipher.final()]).toString('utf8');
  } catch {
    throw new Error('Cannot decrypt a signing key: IDT_KEY_ENCRYPTION_SECRET differs from the one that encrypted it');
  }
}
