import { parseScimFilter, rolesFromGroups, ScimError, USER_FILTER_ATTRIBUTES } from '@idt/identity';
import { describe, expect, it } from 'vitest';
import { applyPatch, parsePatchOperations } from '../src/scim/patch.js';
import { isKnownUserAttribute, parseUserInput } from '../src/scim/users.js';

const USER = 'urn:ietf:params:scim:schemas:core:2.0:User';
const PATCH_OP = 'urn:ietf:params:scim:api:messages:2.0:PatchOp';

describe('SCIM filters', () => {
  it('checks attributes and folds the constant e-mail type', () => {
    expect(parseScimFilter('emails[type eq "work"].value eq "A@B.example"', USER_FILTER_ATTRIBUTES)).toEqual({
      kind: 'compare',
      field: 'email',
      type: 'string',
      op: 'eq',
      value: 'A@B.example',
      caseExact: false,
    });
    expect(parseScimFilter('emails[type eq "home"].value eq "a@b"', USER_FILTER_ATTRIBUTES)).toEqual({
      kind: 'const',
      value: false,
    });
    expect(parseScimFilter('externalId pr or userName pr', USER_FILTER_ATTRIBUTES)).toMatchObject({ kind: 'or' });
    for (const bad of ['nickName eq "x"', 'active co "t"', 'userName eq true', 'userName eq "x" and', 'x'.repeat(2001)]) {
      expect(() => parseScimFilter(bad, USER_FILTER_ATTRIBUTES)).toThrow(ScimError);
    }
  });
});

describe('SCIM PATCH', () => {
  const user = {
    schemas: [USER],
    id: 'u',
    userName: 'a@example.com',
    active: true,
    name: { givenName: 'A', familyName: 'B' },
    emails: [{ value: 'a@example.com', type: 'work', primary: true }],
  };
  const patch = (Operations: unknown[]) =>
    parseUserInput(applyPatch(user, parsePatchOperations({ schemas: [PATCH_OP], Operations }, isKnownUserAttribute)));

  it('takes capitalised ops, string booleans, path-less values and value paths', () => {
    expect(patch([{ op: 'Replace', path: 'active', value: 'False' }]).active).toBe(false);
    expect(patch([{ op: 'replace', value: { active: 'True', 'name.givenName': 'C' } }])).toMatchObject({ active: true });
    expect(patch([{ op: 'replace', value: { name: { givenName: 'C', familyName: 'D' } } }])).toMatchObject({
      givenName: 'C',
      familyName: 'D',
    });
    expect(patch([{ op: 'Replace', path: 'emails[type eq "work"].value', value: 'New@Example.com' }]).email).toBe(
      'new@example.com',
    );
    expect(patch([{ op: 'remove', path: 'name.familyName' }]).familyName).toBe('');
  });

  it('refuses unknown paths and malformed operations with a scimType', () => {
    const scimType = (Operations: unknown[]) => {
      try {
        patch(Operations);
      } catch (error) {
        return (error as ScimError).scimType;
      }
      return undefined;
    };
    expect(scimType([{ op: 'replace', path: 'shoeSize', value: 1 }])).toBe('invalidPath');
    expect(scimType([{ op: 'remove' }])).toBe('noTarget');
    expect(scimType([{ op: 'move', path: 'title' }])).toBe('invalidSyntax');
    expect(scimType([{ op: 'add', path: 'title' }])).toBe('invalidSyntax');
    expect(scimType([{ op: 'replace', path: 'active', value: 'perhaps' }])).toBe('invalidValue');
  });
});

describe('group role mappings', () => {
  it('manage only mapped roles, keep others, and never leave a member without a role', () => {
    const mappings = new Map([
      ['admins', ['admin']],
      ['support', ['support-agent']],
    ]);
    expect(rolesFromGroups(['user'], mappings, ['admins'])).toEqual(['admin', 'user']);
    expect(rolesFromGroups(['admin', 'owner', 'user'], mappings, [])).toEqual(['owner', 'user']);
    expect(rolesFromGroups(['admin'], mappings, [])).toEqual(['user']);
    expect(rolesFromGroups(['admin', 'user'], new Map(), [], new Set(['admin']))).toEqual(['user']);
  });
});
