import { generateKeyPairSync } from 'node:crypto';
import type { SigningKey } from '@idt/core/knex';
import type { StoredClient } from '../../src/clients/store.js';

/** When the fixtures below were made. */
const at = '2026-03-01T10:00:00.000Z';

/**
 * A client record as the client store keeps it: an active service account
 * of no organization, with `overrides` applied.
 */
export function storedClientRecord(overrides: Partial<StoredClient> = {}): StoredClient {
  return {
    clientId: 'sa-fixture',
    organizationId: null,
    name: 'Fixture',
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

/** A new active signing key pair of `alg`, with id `test-<alg>`. */
export function testSigningKey(alg: 'ES256' | 'RS256'): SigningKey {
  const { privateKey, publicKey } =
    alg === 'ES256' ? generateKeyPairSync('ec', { namedCurve: 'P-256' }) : generateKeyPairSync('rsa', { modulusLength: 2048 });
  const kid = `test-${alg}`;
  return {
    kid,
    alg,
    status: 'active',
    publicJwk: { ...publicKey.export({ format: 'jwk' }), kid, alg, use: 'sig' } as never,
    privateJwk: { ...privateKey.export({ format: 'jwk' }), kid, alg, use: 'sig' } as never,
    createdAt: new Date(0).toISOString(),
    retiredAt: null,
    expiresAt: null,
  };
}
