import { randomUUID } from 'node:crypto';
import type { Idt } from '@idt/core';
import { signJwt } from '@idt/core';
import type { Knex } from 'knex';
import { seedTenant } from './identity.js';

/** What minting needs of a running idt: a test server or test instance, or any composition with its database. */
export interface TokenTarget {
  readonly idt: Pick<Idt<any>, 'infrastructure' | 'clock' | 'config'>;
  readonly database: { readonly db: Knex };
}

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
  /** `iat` override, epoch seconds; the server's clock by default. */
  readonly issuedAt?: number;
  /** Sign with the active key of this algorithm (default ES256). */
  readonly alg?: 'ES256' | 'RS256';
}

/**
 * Mints an access token exactly as the provider does (RFC 9068 `at+jwt`,
 * issuer and audience the public base URL, signed with the server's active
 * key), for suites that test the API rather than the sign-in flow.
 */
export async function mintAccessToken(server: TokenTarget, claims: TestTokenClaims, options: MintOptions = {}): Promise<string> {
  if (claims.client_id === undefined) await ensureTestClient(server);
  const keys = await server.idt.infrastructure.keys.listKeys();
  const key = keys.find((candidate) => candidate.status === 'active' && candidate.alg === (options.alg ?? 'ES256'));
  if (!key) throw new Error('The test server has no active signing key');
  // The server's clock: a manual one moved forward in a test mints tokens valid at its time.
  const iat = options.issuedAt ?? Math.floor(server.idt.clock.now().getTime() / 1000);
  const base = server.idt.config.publicBaseUrl;
  return signJwt(
    { typ: 'at+jwt' },
    {
      iss: base,
      aud: base,
      iat,
      exp: iat + (options.expiresIn ?? 900),
      jti: randomUUID(),
      client_id: TEST_CLIENT_ID,
      ...claims,
    },
    key.privateJwk,
  );
}

/** The first-party client minted test tokens name (as every real token names its client). */
export const TEST_CLIENT_ID = 'idt-test-client';

const ensured = new WeakSet<object>();

/** Inserts the test client once per server, when the OpenID provider tables exist. */
async function ensureTestClient(server: TokenTarget): Promise<void> {
  if (ensured.has(server)) return;
  await insertClient(server, { clientId: TEST_CLIENT_ID, organizationId: null, kind: 'application', scopes: ['openid'] });
  ensured.add(server);
}

async function insertClient(
  server: TokenTarget,
  client: { clientId: string; organizationId: string | null; kind: 'application' | 'service-account'; scopes: string[] },
): Promise<void> {
  const { db } = server.database;
  if (!(await db.schema.hasTable('oidc_clients'))) return;
  const now = new Date().toISOString();
  await db('oidc_clients')
    .insert({
      client_id: client.clientId,
      organization_id: client.organizationId,
      kind: client.kind,
      name: client.clientId,
      status: 'active',
      first_party: client.organizationId === null,
      redirect_uris: JSON.stringify(client.kind === 'application' ? ['http://127.0.0.1/callback'] : []),
      post_logout_redirect_uris: '[]',
      scopes: JSON.stringify(client.scopes),
      secret_hash: 'sha256:unused',
      created_at: now,
      updated_at: now,
    })
    .onConflict('client_id')
    .ignore();
}

/**
 * Mints a client-credentials access token of a service account, creating the
 * service-account client row when it does not exist (`sub` = `azp` = the client id).
 */
export async function mintServiceToken(
  server: TokenTarget,
  service: { clientId: string; organizationId: string; scope?: string },
  options: MintOptions = {},
): Promise<string> {
  const scopes = (service.scope ?? '').split(' ').filter(Boolean);
  await insertClient(server, {
    clientId: service.clientId,
    organizationId: service.organizationId,
    kind: 'service-account',
    scopes,
  });
  return mintAccessToken(
    server,
    {
      sub: service.clientId,
      client_id: service.clientId,
      azp: service.clientId,
      org_id: service.organizationId,
      ...(service.scope ? { scope: service.scope } : {}),
    },
    options,
  );
}

/** A role of the members {@link seedTenant} creates. */
type TenantRole = 'owner' | 'admin' | 'manager' | 'user';

/** A tenant of {@link seedTenant} with an access token per member, bound to the tenant. */
export type TenantWithTokens = Awaited<ReturnType<typeof seedTenant>> & { readonly tokens: Record<TenantRole, string> };

/** Seeds a tenant ({@link seedTenant}) and mints an access token per member, bound to its organization. */
export async function tenantWithTokens(server: TokenTarget, name?: string): Promise<TenantWithTokens> {
  const tenant = await seedTenant(server.database.db, name);
  const tokens = {} as Record<TenantRole, string>;
  for (const role of ['owner', 'admin', 'manager', 'user'] as const) {
    tokens[role] = await mintAccessToken(server, { sub: tenant[role].id, org_id: tenant.organization.id });
  }
  return { ...tenant, tokens };
}
