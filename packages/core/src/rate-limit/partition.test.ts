import { describe, expect, it } from 'vitest';
import type { Principal } from '../auth/principal.js';
import { ratePartition } from './partition.js';

const principal = (overrides: Partial<Principal>): Principal => ({
  kind: 'user',
  subject: 'user-1',
  userId: 'user-1',
  clientId: 'app',
  organizationId: 'org-1',
  permissions: new Set(),
  scopes: new Set(),
  sessionId: null,
  name: null,
  credentialId: null,
  ...overrides,
});

describe('ratePartition (SPEC 8.1)', () => {
  it('counts an authenticated caller under the organization, else the user, else its subject', () => {
    expect(ratePartition('global', principal({}), '192.0.2.1')).toBe('org:org-1');
    expect(ratePartition('auth', principal({}), '192.0.2.1')).toBe('org:org-1');
    expect(ratePartition('upload', principal({ organizationId: null }), '192.0.2.1')).toBe('user:user-1');
    const service = principal({ kind: 'service', subject: 'sa-billing', userId: null, organizationId: null });
    expect(ratePartition('global', service, '192.0.2.1')).toBe('client:sa-billing');
  });

  it('skips the organization under the Registration policy', () => {
    expect(ratePartition('registration', principal({}), '192.0.2.1')).toBe('user:user-1');
    const service = principal({ kind: 'service', subject: 'sa-billing', userId: null });
    expect(ratePartition('registration', service, '192.0.2.1')).toBe('client:sa-billing');
  });

  it('counts a caller known only by the organization of the client it names under that organization, else the IP', () => {
    expect(ratePartition('auth', { organizationId: 'org-2' }, '192.0.2.1')).toBe('org:org-2');
    expect(ratePartition('auth', { organizationId: null }, '192.0.2.1')).toBe('ip:192.0.2.1');
    expect(ratePartition('auth', { organizationId: '' }, '192.0.2.1')).toBe('ip:192.0.2.1');
  });

  it('counts an anonymous caller under the IP, `unknown` when there is none', () => {
    expect(ratePartition('global', null, '2001:db8::1')).toBe('ip:2001:db8::1');
    expect(ratePartition('auth', null, undefined)).toBe('ip:unknown');
    expect(ratePartition('auth', null, 'unknown')).toBe('ip:unknown');
  });
});
