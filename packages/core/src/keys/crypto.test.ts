import { describe, expect, it } from 'vitest';
import { createSecretBox } from './crypto.js';

describe('createSecretBox', () => {
  const secret = 'a server secret of reasonable length';

  it('seals with a fresh IV each time and opens under the same secret, purpose and associated data', () => {
    const box = createSecretBox(secret, 'idt-webhook-secrets');
    const first = box.seal('whsec_abc', 'endpoint-1');
    const second = box.seal('whsec_abc', 'endpoint-1');
    expect(first).not.toBe(second);
    expect(first).not.toContain('whsec_abc');
    expect(first).toMatch(/^v1\.[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(box.open(first, 'endpoint-1')).toBe('whsec_abc');
    expect(createSecretBox(secret, 'idt-webhook-secrets').open(second, 'endpoint-1')).toBe('whsec_abc');
  });

  it('refuses another row, another purpose, another server secret and altered bytes', () => {
    const box = createSecretBox(secret, 'idt-webhook-secrets');
    const sealed = box.seal('whsec_abc', 'endpoint-1');
    expect(() => box.open(sealed, 'endpoint-2')).toThrow(/sealed secret \(idt-webhook-secrets\)/);
    expect(() => createSecretBox(secret, 'idt-signing-keys').open(sealed, 'endpoint-1')).toThrow(/signing key/);
    expect(() => createSecretBox(`${secret}!`, 'idt-webhook-secrets').open(sealed, 'endpoint-1')).toThrow(
      /IDT_KEY_ENCRYPTION_SECRET differs/,
    );
    const parts = sealed.split('.');
    const body = parts[3] as string;
    parts[3] = `${body.slice(0, -2)}${body.endsWith('AA') ? 'BB' : 'AA'}`;
    expect(() => box.open(parts.join('.'), 'endpoint-1')).toThrow(/altered/);
    expect(() => box.open('whsec_plain', 'endpoint-1')).toThrow(/Unrecognized sealed secret format/);
  });
});
