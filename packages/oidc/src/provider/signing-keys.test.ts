import { verify } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { testSigningKey as signingKey } from '../../test/support/clients.js';
import { loadOidcProvider } from './load.js';
import { providerSigningKeys } from './signing-keys.js';

type ExternalKey = {
  kid: string;
  alg: string;
  keyObject(): import('node:crypto').KeyObject;
  sign(data: Uint8Array): Promise<Uint8Array>;
};

describe('provider signing keys', () => {
  it('sign off the event loop, as JWS wants: raw r || s for ES256, PKCS#1 v1.5 for RS256', async () => {
    const oidc = await loadOidcProvider();
    const keys = providerSigningKeys(oidc, [signingKey('ES256'), signingKey('RS256')]) as ExternalKey[];
    expect(keys.map((key) => [key.kid, key.alg])).toEqual([
      ['test-ES256', 'ES256'],
      ['test-RS256', 'RS256'],
    ]);
    expect(keys.every((key) => key instanceof oidc.ExternalSigningKey)).toBe(true);
    const data = Buffer.from('eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ1c2VyIn0');
    const [es256, rs256] = keys as [ExternalKey, ExternalKey];

    const pending = es256.sign(data);
    expect(pending).toBeInstanceOf(Promise);
    const ecSignature = await pending;
    expect(ecSignature).toHaveLength(64);
    expect(verify('sha256', data, { key: es256.keyObject(), dsaEncoding: 'ieee-p1363' }, ecSignature)).toBe(true);

    const rsaSignature = await rs256.sign(data);
    expect(rsaSignature).toHaveLength(256);
    expect(verify('sha256', data, rs256.keyObject(), rsaSignature)).toBe(true);
    expect(verify('sha256', Buffer.from('tampered'), rs256.keyObject(), rsaSignature)).toBe(false);
  });

  it('publish only the public half', async () => {
    const oidc = await loadOidcProvider();
    const [key] = providerSigningKeys(oidc, [signingKey('ES256')]) as ExternalKey[];
    expect(key?.keyObject().type).toBe('public');
  });
});
