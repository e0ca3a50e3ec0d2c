import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { IdtConfig } from '../config/config.js';
import { randomToken } from '../ids.js';

/** The fixed secret of the Testing environment when none is configured. */
const TESTING_SECRET = 'idt-testing-environment-key-encryption-secret';

/**
 * The secret that encrypts private signing keys: `IDT_KEY_ENCRYPTION_SECRET`
 * when set (required in Production); in Development a random secret kept in
 * `<dataDir>/key-encryption.secret` (mode 0600), created on first use; in
 * Testing a fixed one.
 */
export function resolveKeyEncryptionSecret(config: Pick<IdtConfig, 'keyEncryptionSecret' | 'environment' | 'dataDir'>): string {
  if (config.keyEncryptionSecret) return config.keyEncryptionSecret;
  if (config.environment === 'Production') {
    throw new Error('IDT_KEY_ENCRYPTION_SECRET is required in Production');
  }
  if (config.environment === 'Testing') return TESTING_SECRET;
  const file = join(config.dataDir, 'key-encryption.secret');
  if (existsSync(file)) return readFileSync(file, 'utf8').trim();
  mkdirSync(config.dataDir, { recursive: true });
  const secret = randomToken(32);
  writeFileSync(file, `${secret}\n`, { mode: 0o600, flag: 'wx' });
  chmodSync(file, 0o600);
  return secret;
}
