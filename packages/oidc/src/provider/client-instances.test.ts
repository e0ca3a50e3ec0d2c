import { generateKeyPairSync } from 'node:crypto';
import { createManualClock } from '@idt/core';
import type { SigningKey } from '@idt/core/knex';
import { describe, expect, it } from 'vitest';
import type { StoredClient } from '../clients/store.js';
import { clientMetadata, createOidcProvider } from './create-provider.js';
import { loadOidcProvider } from './load.js';

const at = '2026-03-01T10:00:00.000Z';

function storedClient(overrides: Partial<StoredClient>): StoredClient {
  return {
    clientId: 'sa-instances',
    organizationId: '01a21df5-be2a-74d9-bed3-5d67a82cd208',
    name: 'Instances',
    kind: 'service-account',
    status: 'active',
    firstParty: false,
    redirectUris: [],
    postLogoutRedirectUris: [],
    backchannelLogoutUri: null,
    backchannelLogoutSessionRequired: false,
    frontchannelLogoutUri: null,
    scopes: ['users.read'],
    refreshTokenLifetime: null,
    createdByUserId: null,
    createdAt: at,
    updatedAt: at,
    lastUsedAt: null,
    lastRotatedAt: null,
    lastRotatedByUserId: null,
    secretHash: 'sha256:00',
    branding: null,
    ...overrides,
  };
}

/** Every hook throws: building client instances calls none of them. */
const hooks = new Proxy(
  {},
  {
    get: (_target, name) => () => {
      throw new Error(`hook ${String(name)} called`);
    },
  },
);

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
    const keys = (['ES256', 'RS256'] as const).map((alg): SigningKey => {
      const { privateKey, publicKey } =
        alg === 'ES256'
          ? generateKeyPairSync('ec', { namedCurve: 'P-256' })
          : generateKeyPairSync('rsa', { modulusLength: 2048 });
      const jwk = { kid: `instances-${alg}`, alg, use: 'sig' };
      return {
        kid: jwk.kid,
        alg,
        status: 'active',
        publicJwk: { ...publicKey.export({ format: 'jwk' }), ...jwk } as never,
        privateJwk: { ...privateKey.export({ format: 'jwk' }), ...jwk } as never,
        createdAt: at,
        retiredAt: null,
        expiresAt: null,
      };
    });
    const provider = createOidcProvider({
      oidc,
      issuer: 'https://id.example',
      apiResource: 'https://id.example',
      authUrl: 'https://id.example/auth',
      keys,
      secret: 'a-secret-of-enough-length-for-cookies',
      adapter: class {} as never,
      hooks: hooks as never,
      findClient: async () => undefined,
      logoutSource: () => undefined,
      postLogoutSuccessSource: () => undefined,
      refreshReuseLeewaySeconds: 30,
      successorOf: (value) => `next-${value}`,
      familyRevocation: { end: async () => undefined },
      clock: createManualClock(at),
    });
    const Client = provider.Client as unknown as new (metadata: Record<string, unknown>) => Record<string, unknown>;

    const clients = [
      storedClient({}),
      storedClient({
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
