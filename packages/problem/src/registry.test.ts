import { describe, expect, it } from 'vitest';
import { fieldErrorsFromIssues, isValidProblemCode, memberPath, ProblemRegistry, problemRegistry } from './index.js';

describe('ProblemRegistry', () => {
  it('accepts dotted PascalCase codes with one dot', () => {
    for (const code of ['Area.Reason', 'Inquiries.InvalidStatusTransition', 'Bff.SessionRefreshFailed', 'A1.B2']) {
      expect(isValidProblemCode(code)).toBe(true);
    }
    for (const code of ['area.reason', 'Area', 'Area.Reason.More', 'Area.reason', 'Area_x.Reason', 'Area. Reason', '.Reason']) {
      expect(isValidProblemCode(code)).toBe(false);
    }
  });

  it('checks codes at registration', () => {
    const registry = new ProblemRegistry();
    expect(() => registry.register('@x/y', { 'bad.code': { kind: 'Conflict', description: 'x' } })).toThrow(/dotted PascalCase/);
    expect(() => registry.register('@x/y', { 'A.B': { kind: 'Teapot' as never, description: 'x' } })).toThrow(/unknown kind/);
  });

  it('is idempotent for the same kind and refuses a conflicting one', () => {
    const registry = new ProblemRegistry();
    registry.register('@x/a', { 'Things.Gone': { kind: 'NotFound', description: 'x' } });
    expect(() => registry.register('@x/a', { 'Things.Gone': { kind: 'NotFound', description: 'x' } })).not.toThrow();
    expect(() => registry.register('@x/b', { 'Things.Gone': { kind: 'Conflict', description: 'x' } })).toThrow(
      /already registered/,
    );
    expect(registry.get('Things.Gone')).toMatchObject({ status: 404, owner: '@x/a' });
  });

  it('registers the status-generic codes of SPEC 7.3', () => {
    const codes = problemRegistry.list().map((definition) => definition.code);
    expect(codes).toEqual(
      expect.arrayContaining([
        'Validation.Failed',
        'Auth.Unauthenticated',
        'Auth.Forbidden',
        'Http.NotFound',
        'Http.MethodNotAllowed',
        'Http.ClientError',
        'RateLimit.Exceeded',
        'Setup.Required',
        'Server.Error',
      ]),
    );
  });
});

describe('member paths', () => {
  it('camelCases every segment and preserves dots', () => {
    expect(memberPath(['Email'])).toBe('email');
    expect(memberPath(['Address.Street'])).toBe('address.street');
    expect(memberPath(['Client', 'RedirectUris', 0])).toBe('client.redirectUris[0]');
    expect(memberPath(['themeJson', 'light', 'primary'])).toBe('themeJson.light.primary');
    expect(memberPath([])).toBe('');
  });

  it('groups issues by path without repeating a message', () => {
    expect(
      fieldErrorsFromIssues([
        { path: ['email'], message: 'Required' },
        { path: ['email'], message: 'Required' },
        { path: ['email'], message: 'Too long' },
        { path: ['Scopes', 1], message: 'Unknown scope' },
      ]),
    ).toEqual({ email: ['Required', 'Too long'], 'scopes[1]': ['Unknown scope'] });
  });
});
