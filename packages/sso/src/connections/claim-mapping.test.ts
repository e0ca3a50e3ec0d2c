import { describe, expect, it } from 'vitest';
import { mapSamlAttributes, mapUpstreamClaims, rolesForGroups } from './claim-mapping.js';
import { DEFAULT_OIDC_MAPPING, DEFAULT_SAML_MAPPING } from './service.js';

const WS = 'http://schemas.xmlsoap.org/ws/2005/05/identity/claims';
const ENTRA_GROUPS = 'http://schemas.microsoft.com/ws/2008/06/identity/claims/groups';

describe('mapUpstreamClaims', () => {
  it('reads the standard claims by default and by the stored default mapping', () => {
    const claims = {
      email: ' ada@example.com ',
      given_name: 'Ada',
      family_name: 'Lovelace',
      name: 'Ada L.',
      groups: ['eng', 'eng', 'ops'],
    };
    const expected = { email: 'ada@example.com', firstName: 'Ada', lastName: 'Lovelace', name: 'Ada L.', groups: ['eng', 'ops'] };
    expect(mapUpstreamClaims(claims)).toEqual(expected);
    expect(mapUpstreamClaims(claims, DEFAULT_OIDC_MAPPING)).toEqual(expected);
  });

  it('follows a mapping and accepts one group as a string', () => {
    const claims = { mail: 'ada@example.com', first: 'Ada', roles: 'admins', email: 'other@example.com' };
    expect(mapUpstreamClaims(claims, { email: 'mail', firstName: 'first', groups: 'roles' })).toEqual({
      email: 'ada@example.com',
      firstName: 'Ada',
      lastName: null,
      name: null,
      groups: ['admins'],
    });
  });

  it('leaves out what is not text, too long, or not an address', () => {
    const claims = {
      email: 'not an address',
      given_name: 42,
      family_name: 'x'.repeat(201),
      name: '\u0000\u0007',
      groups: ['ok', 7, { nested: true }, '', 'g'.repeat(257), null],
    };
    expect(mapUpstreamClaims(claims)).toEqual({ email: null, firstName: null, lastName: null, name: null, groups: ['ok', '7'] });
    expect(mapUpstreamClaims({})).toEqual({ email: null, firstName: null, lastName: null, name: null, groups: [] });
  });

  it('keeps at most 500 groups', () => {
    const groups = Array.from({ length: 800 }, (_, index) => `g${index}`);
    expect(mapUpstreamClaims({ groups }).groups).toHaveLength(500);
  });
});

describe('mapSamlAttributes', () => {
  it('reads the short names Okta, Keycloak and Google Workspace are set up with', () => {
    const attributes = { email: ['ada@example.com'], firstName: ['Ada'], lastName: ['Lovelace'], groups: ['eng', 'ops'] };
    expect(mapSamlAttributes(attributes, DEFAULT_SAML_MAPPING)).toEqual({
      email: 'ada@example.com',
      firstName: 'Ada',
      lastName: 'Lovelace',
      name: null,
      groups: ['eng', 'ops'],
    });
  });

  it('falls back to the claim URIs Entra ID sends by default', () => {
    const attributes = {
      [`${WS}/emailaddress`]: ['ada@contoso.com'],
      [`${WS}/givenname`]: ['Ada'],
      [`${WS}/surname`]: ['Lovelace'],
      'http://schemas.microsoft.com/identity/claims/displayname': ['Ada Lovelace'],
      [ENTRA_GROUPS]: ['0e4a5f8c-1111-4a3e-9d47-2a7c0c2b9f10', '7d1f2c3b-2222-4b5c-8e6f-3a4b5c6d7e8f'],
    };
    expect(mapSamlAttributes(attributes, DEFAULT_SAML_MAPPING)).toEqual({
      email: 'ada@contoso.com',
      firstName: 'Ada',
      lastName: 'Lovelace',
      name: 'Ada Lovelace',
      groups: ['0e4a5f8c-1111-4a3e-9d47-2a7c0c2b9f10', '7d1f2c3b-2222-4b5c-8e6f-3a4b5c6d7e8f'],
    });
    expect(mapSamlAttributes(attributes).email).toBe('ada@contoso.com');
  });

  it('reads a changed mapping alone, and skips empty values', () => {
    const attributes = { 'urn:custom:mail': ['', 'ada@example.com'], email: ['fallback@example.com'], team: ['eng'] };
    expect(mapSamlAttributes(attributes, { email: 'urn:custom:mail', groups: 'team' })).toMatchObject({
      email: 'ada@example.com',
      groups: ['eng'],
    });
    expect(mapSamlAttributes({ email: ['fallback@example.com'] }, { email: 'urn:custom:mail' }).email).toBeNull();
  });

  it('never reads inherited properties', () => {
    expect(mapSamlAttributes(JSON.parse('{"__proto__": {"email": ["x@example.com"]}}'))).toMatchObject({ email: null });
    expect(mapSamlAttributes({}, { email: 'constructor' }).email).toBeNull();
  });
});

describe('rolesForGroups', () => {
  const table = [
    { group: 'admins', role: 'admin' },
    { group: 'leads', role: 'manager' },
    { group: 'ops', role: 'admin' },
  ];

  it('maps every matching group in the table’s order, without duplicates', () => {
    expect(rolesForGroups(['ops', 'leads', 'admins'], table, 'user')).toEqual(['admin', 'manager']);
  });

  it('compares group names exactly', () => {
    expect(rolesForGroups(['Admins', 'admins '], table, 'user')).toEqual(['user']);
  });

  it('gives the default role when nothing maps, and nothing without a default', () => {
    expect(rolesForGroups([], table, 'user')).toEqual(['user']);
    expect(rolesForGroups(['eng'], [], null)).toEqual([]);
    expect(rolesForGroups(['admins'], table, null)).toEqual(['admin']);
  });
});
