import { createManualClock } from '@idt/core';
import { describe, expect, it } from 'vitest';
import { authLimitedEndpoint, authPartition, createClientOrganizations, requestClientId } from './rate-partition.js';

const basic = (id: string, secret = 'secret') =>
  `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;

describe('rate-limit partition policy', () => {
  it('counts the token, revocation, introspection, PAR and authorization endpoints', () => {
    expect(authLimitedEndpoint('/connect/token')).toBe('client-authentication');
    expect(authLimitedEndpoint('/connect/revoke')).toBe('client-authentication');
    expect(authLimitedEndpoint('/connect/introspect')).toBe('client-authentication');
    expect(authLimitedEndpoint('/connect/par')).toBe('client-authentication');
    expect(authLimitedEndpoint('/connect/authorize')).toBe('authorization');
    expect(authLimitedEndpoint('/connect/authorize/uid-1')).toBe('authorization');
    for (const path of ['/connect/logout', '/.well-known/jwks.json', '/.well-known/openid-configuration', '/connect/tokens']) {
      expect(authLimitedEndpoint(path)).toBeUndefined();
    }
  });

  it('finds the client whatever the client-authentication method', () => {
    const none = { method: 'POST', authorization: undefined, query: undefined, form: undefined } as const;
    const token = { ...none, endpoint: 'client-authentication' } as const;
    expect(requestClientId({ ...token, authorization: basic('acme app') })).toBe('acme app');
    expect(requestClientId({ ...token, form: { client_id: 'acme-app', client_secret: 'x' } })).toBe('acme-app');
    // Basic names the client when both are sent (oidc-provider refuses such a request anyway).
    expect(requestClientId({ ...token, authorization: basic('basic-app'), form: { client_id: 'form-app' } })).toBe('basic-app');
    // The token endpoint does not read the query.
    expect(requestClientId({ ...token, query: { client_id: 'acme-app' } })).toBeUndefined();
    expect(requestClientId({ ...token, form: { client_id: ['a', 'b'] } })).toBeUndefined();
    expect(requestClientId({ ...token, form: { client_id: '' } })).toBeUndefined();
    expect(requestClientId(token)).toBeUndefined();

    const authorize = { ...none, endpoint: 'authorization', method: 'GET' } as const;
    expect(requestClientId({ ...authorize, query: { client_id: 'acme-app', response_type: 'code' } })).toBe('acme-app');
    expect(requestClientId({ ...authorize, method: 'POST', form: { client_id: 'acme-app' } })).toBe('acme-app');
    expect(requestClientId({ ...authorize, method: 'POST', query: { client_id: 'acme-app' } })).toBeUndefined();
    expect(requestClientId({ ...authorize, authorization: basic('acme-app') })).toBeUndefined();
  });

  it('partitions by organization, else user, else IP', () => {
    expect(authPartition({ organizationId: 'org-1', userId: 'user-1', ip: '192.0.2.1' })).toBe('org:org-1');
    expect(authPartition({ organizationId: null, userId: 'user-1', ip: '192.0.2.1' })).toBe('user:user-1');
    expect(authPartition({ organizationId: null, ip: '192.0.2.1' })).toBe('ip:192.0.2.1');
    expect(authPartition({ ip: undefined })).toBe('ip:unknown');
  });
});

describe('client organizations', () => {
  function setup(options: { unknownMax?: number } = {}) {
    const clock = createManualClock('2030-01-01T00:00:00Z');
    const clients = new Map<string, string | null>([
      ['acme-app', 'org-a'],
      ['beta-app', 'org-b'],
      ['platform-app', null],
    ]);
    const lookups: string[] = [];
    const organizations = createClientOrganizations({
      find: async (clientId) => {
        lookups.push(clientId);
        if (clientId === 'broken') throw new Error('database down');
        return clients.has(clientId) ? { organizationId: clients.get(clientId) ?? null } : undefined;
      },
      clock,
      ...options,
    });
    return { clock, clients, lookups, organizations };
  }

  it('looks a client up once, then answers from memory synchronously', async () => {
    const { lookups, organizations } = setup();
    const first = organizations.of('acme-app');
    expect(first).toBeInstanceOf(Promise);
    // Concurrent first asks share one lookup.
    const again = organizations.of('acme-app');
    expect(await first).toBe('org-a');
    expect(await again).toBe('org-a');
    expect(organizations.of('acme-app')).toBe('org-a');
    expect(await organizations.of('platform-app')).toBeNull();
    expect(organizations.of('platform-app')).toBeNull();
    expect(lookups).toEqual(['acme-app', 'platform-app']);
  });

  it('remembers ids that do not exist for a minute, apart and bounded, and never looks up impossible ones', async () => {
    const { clock, lookups, organizations } = setup({ unknownMax: 3 });
    await organizations.of('acme-app');
    for (let index = 0; index < 10; index++) expect(await organizations.of(`made-up-${index}`)).toBeNull();
    expect(organizations.size()).toEqual({ known: 1, unknown: 3 });
    // The registered client is still remembered: made-up ids cannot push it out.
    expect(organizations.of('acme-app')).toBe('org-a');
    expect(organizations.of('made-up-9')).toBeNull();
    clock.advance(60_000);
    expect(organizations.of('made-up-9')).toBeInstanceOf(Promise);
    expect(organizations.of('x'.repeat(201))).toBeNull();
    expect(lookups.filter((id) => id.startsWith('x'))).toEqual([]);
  });

  it('forgets an evicted client and the ids that did not exist yet', async () => {
    const { clients, lookups, organizations } = setup();
    expect(await organizations.of('acme-app')).toBe('org-a');
    expect(await organizations.of('new-app')).toBeNull();
    clients.set('new-app', 'org-a');
    clients.set('acme-app', 'org-b');
    organizations.evict('new-app');
    expect(await organizations.of('new-app')).toBe('org-a');
    expect(organizations.of('acme-app')).toBe('org-a');
    organizations.evict('*');
    expect(await organizations.of('acme-app')).toBe('org-b');
    expect(lookups).toEqual(['acme-app', 'new-app', 'new-app', 'acme-app']);
  });

  it('remembers nothing from a lookup that an eviction overtook, or that failed', async () => {
    const { clients, lookups, organizations } = setup();
    const pending = organizations.of('late-app');
    clients.set('late-app', 'org-a');
    organizations.evict('late-app');
    expect(await pending).toBeNull();
    expect(await organizations.of('late-app')).toBe('org-a');
    expect(await organizations.of('broken')).toBeNull();
    expect(organizations.of('broken')).toBeInstanceOf(Promise);
    expect(lookups).toEqual(['late-app', 'late-app', 'broken', 'broken']);
  });
});
