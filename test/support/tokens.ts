import { randomUUID } from 'node:crypto';
import { signJwt } from '@idt/core';
import type { TestServer } from './server.js';

/** Claims of a test access token; `sub` is required, the rest are optional. */
export interface TestTokenClaims {
  readonly sub: string;
  readonly org_id?: string;
  readonly scope?: string;
  readonly sid?: string;
  readonly client_id?: string;
  readonly [claim: string]: unknown;
}

/** Options of {@link mintAccessToken}. */
export interface MintOptions {
  /** Lifetime in seconds (default 900). Negative values mint expired tokens. */
  readonly expiresIn?: number;
  /** `iat` override, epoch seconds. */
  readonly issuedAt?: number;
  /** Sign with the active key of this algorithm (default ES256). */
  readonly alg?: 'ES256' | 'RS256';
}

/**
 * Mints an access token exactly as the provider does (RFC 9068 `at+jwt`,
 * issuer and audience the public base URL, signed with the server's active
 * key), for suites that test the API rather than the sign-in flow.
 */
export async function mintAccessToken(server: TestServer, claims: TestTokenClaims, options: MintOptions = {}): Promise<string> {
  const keys = await server.idt.services.keys.listKeys();
  const key = keys.find((candidate) => candidate.status === 'active' && candidate.alg === (options.alg ?? 'ES256'));
  if (!key) throw new Error('The test server has no active signing key');
  const iat = options.issuedAt ?? Math.floor(Date.now() / 1000);
  const base = server.idt.config.publicBaseUrl;
  return signJwt(
    { typ: 'at+jwt' },
    {
      iss: base,
      aud: base,
      iat,
      exp: iat + (options.expiresIn ?? 900),
      jti: randomUUID(),
      client_id: 'test-client',
      ...claims,
    },
    key.privateJwk,
  );
}
