import { describe, expect, it } from 'vitest';
import { ConfigError } from '../config/config.js';
import { createAuditActionRegistry, defineAuditActions } from './actions.js';
import { canonicalJson, hashAuditRecord } from './chain.js';
import { auditActorOf, auditRequestOf, resolveAuditSettings } from './context.js';
import { AuditEntryError, assertNoSecrets, isSecretLookingKey, normalizeAuditEntry } from './entry.js';

describe('audit entries', () => {
  it('tells secret-looking metadata keys from harmless ones', () => {
    for (const key of [
      'password',
      'newPassword',
      'client_secret',
      'resetToken',
      'code',
      'otpCode',
      'apiKey',
      'passwordHash',
      'privateJwk',
      'recoveryCodes',
      'Authorization',
      'cookie',
    ])
      expect(isSecretLookingKey(key), key).toBe(true);
    for (const key of [
      'apiKeyId',
      'tokenCount',
      'keyType',
      'codeLength',
      'reason',
      'from',
      'to',
      'sessionsEnded',
      'by',
      'email',
      'roles',
    ])
      expect(isSecretLookingKey(key), key).toBe(false);
  });

  it('refuses secrets at any depth and in values that are tokens or private keys', () => {
    expect(() => assertNoSecrets({ a: [{ b: { clientSecret: 'x' } }] })).toThrow(/metadata\.a\[0\]\.b\.clientSecret/);
    expect(() => assertNoSecrets({ note: '-----BEGIN PRIVATE KEY-----\nabc' })).toThrow(AuditEntryError);
    expect(() => assertNoSecrets({ roles: ['admin'], count: 2 })).not.toThrow();
  });

  it('normalizes an entry: defaults, cut displays and user agents, plain JSON only', () => {
    const normalized = normalizeAuditEntry({
      action: 'tests.thing.renamed',
      organizationId: 'ABC',
      actor: { type: 'user', id: 'u', display: 'x'.repeat(500) },
      userAgent: 'y'.repeat(2000),
    });
    expect(normalized).toMatchObject({ organizationId: 'abc', outcome: 'success', target: null, ip: null, metadata: {} });
    expect(normalized.actor.display).toHaveLength(200);
    expect(normalized.userAgent).toHaveLength(512);
    const base = {
      action: 'tests.thing.renamed',
      organizationId: null,
      actor: { type: 'system' as const, id: null, display: null },
    };
    expect(() => normalizeAuditEntry({ ...base, metadata: { when: new Date() as never } })).toThrow(/JSON/);
    expect(() => normalizeAuditEntry({ ...base, metadata: { n: Number.NaN } })).toThrow(/finite/);
    expect(() => normalizeAuditEntry({ ...base, organizationId: 'Platform' })).toThrow(/organizationId null/);
    expect(() => normalizeAuditEntry({ ...base, metadata: { big: 'z'.repeat(20_000) } })).toThrow(/larger/);
    expect(() => normalizeAuditEntry({ ...base, actor: { type: 'robot' as never, id: null, display: null } })).toThrow(
      AuditEntryError,
    );
  });

  it('hashes a canonical form that does not depend on key order', () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { f: 2, e: 3 }], c: null } })).toBe('{"a":{"c":null,"d":[1,{"e":3,"f":2}]},"b":1}');
    const fields = {
      id: 'r',
      sequence: 1,
      occurredAt: '2026-01-01T00:00:00.000Z',
      organizationId: null,
      actor: { type: 'system' as const, id: null, display: null },
      action: 'tests.thing.renamed',
      target: null,
      outcome: 'success' as const,
      ip: null,
      userAgent: null,
      traceId: null,
      metadata: { b: 1, a: 2 },
    };
    const reordered = { ...fields, metadata: { a: 2, b: 1 } };
    expect(hashAuditRecord(fields, '0'.repeat(64))).toBe(hashAuditRecord(reordered, '0'.repeat(64)));
    expect(hashAuditRecord(fields, '0'.repeat(64))).not.toBe(hashAuditRecord(fields, '1'.repeat(64)));
  });

  it('keeps one registry: a name registered twice by different modules is refused', () => {
    const registry = createAuditActionRegistry();
    const mine = defineAuditActions('mine', { a: { action: 'mine.thing.done', description: 'Done.' } });
    registry.register(Object.values(mine));
    registry.register(Object.values(mine));
    expect(() => registry.register([{ action: 'mine.thing.done', module: 'other', description: 'Done.' }])).toThrow(
      /already registered/,
    );
    expect(() => registry.register([{ action: 'NoDots', module: 'x', description: 'x' }])).toThrow(/dotted/);
    expect(registry.list().map((action) => action.action)).toEqual(['mine.thing.done']);
  });

  it('reads IDT_AUDIT_RETENTION_DAYS (default 365) and refuses a bad value', () => {
    expect(resolveAuditSettings({})).toEqual({ retentionDays: 365 });
    expect(resolveAuditSettings({ IDT_AUDIT_RETENTION_DAYS: '30' })).toEqual({ retentionDays: 30 });
    expect(() => resolveAuditSettings({ IDT_AUDIT_RETENTION_DAYS: '0' })).toThrow(ConfigError);
    expect(() => resolveAuditSettings({ IDT_AUDIT_RETENTION_DAYS: 'forever' })).toThrow(ConfigError);
  });

  it('names the actor and the request facts of a route', () => {
    const principal = {
      kind: 'apiKey' as const,
      subject: 'u-1',
      userId: 'u-1',
      clientId: null,
      organizationId: 'o',
      permissions: new Set<string>(),
      scopes: new Set<string>(),
      sessionId: null,
      name: 'CI key',
      credentialId: 'key-1',
    };
    expect(auditActorOf(principal)).toEqual({ type: 'apiKey', id: 'key-1', display: 'CI key' });
    expect(auditActorOf({ ...principal, kind: 'user' })).toEqual({ type: 'user', id: 'u-1', display: 'CI key' });
    expect(auditActorOf({ ...principal, kind: 'service', clientId: 'svc' })).toEqual({
      type: 'service',
      id: 'svc',
      display: 'CI key',
    });
    expect(auditRequestOf({ clientIp: 'unknown', headers: { get: () => 'agent' }, traceId: 't' })).toEqual({
      ip: null,
      userAgent: 'agent',
      traceId: 't',
    });
  });
});
