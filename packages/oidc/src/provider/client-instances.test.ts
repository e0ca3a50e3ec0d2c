import { createManualClock } from '@idt/core';
import { describe, expect, it } from 'vitest';
import { storedClientRecord, testSigningKey } from '../../test/support/clients.js';
import { clientMetadata, createOidcProvider, type ProviderHooks } from './create-provider.js';
import { loadOidcProvider } from './load.js';
import type { OidcAdapter } from './store.js';

/** A hook or adapter method that fails the test when called. */
const unused = (name: string) => (): never => {
  throw new Error(`${name} called`);
};

/** Every hook throws: building client instances calls none of them. */
const hooks: ProviderHooks = {
  accountClaims: unused('hook accountClaims'),
  grantContext: unused('hook grantContext'),
  cachedGrantContext: unused('hook cachedGrantContext'),
  grantStillApplies: unused('hook grantStillApplies'),
  refreshTokenLifetime: unused('hook refreshTokenLifetime'),
  validateOrganizationParameter: unused('hook validateOrganizationParameter'),
};

/** Nor do they reach the adapter. */
class UnusedAdapter implements OidcAdapter {
  upsert = unused('adapter upsert');
  find = unused('adapter find');
  findByUserCode = unused('adapter findByUserCode');
  findByUid = unused('adapter findByUid');
  consume = unused('adapter consume');
  destroy = unused('adapter destroy');
  revokeByGrantId = unused('adapter revokeByGrantId');
}

/**
 * The provider keeps one instance per busy client (10,000 clients: 10,000
 * instances). V8 keeps an object of 20 or more own properties, as oidc-provider
 * builds a client instance, in a property dictionary twice the size: 2.1 KiB
 * an instance against 1.3 KiB (measured on Node 20). These instances carry
 * only the extra metadata the provider reads, and stay below that.
 */
describe('client instances of idt provider', () => {
  it('carry the organization and API scopes, and fewer than 20 own properties, for every kind of client', async () => {
    const oidc = await loadOidcProvider();
    // ES256 signs access tokens, RS256 the id tokens every client asks for.
    const keys = [testSigningKey('ES256'), testSigningKey('RS256')];
    const provider = createOidcProvider({
      oidc,
      issuer: 'https://id.example',
      apiResource: 'https://id.example',
      authUrl: 'https://id.example/auth',
      keys,
      secret: 'a-secret-of-enough-length-for-cookies',
      adapter: UnusedAdapter,
      hooks,
      findClient: async () => undefined,
      logoutSource: () => undefined,
      postLogoutSuccessSource: () => undefined,
      refreshReuseLeewaySeconds: 30,
      successorOf: (value) => `next-${value}`,
      familyRevocation: { end: async () => undefined },
      clock: createManualClock('2026-03-01T10:00:00Z'),
    });
    const Client = provider.Client as unknown as new (metadata: Record<string, unknown>) => Record<string, unknown>;

    const clients = [
      storedClientRecord({ organizationId: '01a21df5-be2a-74d9-bed3-5d67a82cd208' }),
      storedClientRecord({
        organizationId: '01a21df5-be2a-74d9-bed3-5d67a82cd208',
        clientId: 'app-instances',
        kind: 'application',
        firstParty: true,
        redirectUris: ['https://app.example/callback'],
        postLogoutRedirectUris: ['https://app.example/'],
        backchannelLogoutUri: 'https://app.example/backchannel',
        frontchannelLogoutUri: 'https://app.example/frontchannel',
        scopes: ['openid', 'profile', 'email', 'roles', 'offline_access', 'users.read', 'users.write'],
      }),
    ];
    for (const record of clients) {
      const instance = new Client(clientMetadata(record));
      expect(instance).toMatchObject({
        clientId: record.clientId,
        idt_organization_id: record.organizationId,
        idt_api_scopes: record.scopes.filter((scope) => scope.startsWith('users.')).join(' '),
      });
      expect(Reflect.ownKeys(instance).length, Reflect.ownKeys(instance).map(String).join(', ')).toBeLessThan(20);
    }
  });
});
