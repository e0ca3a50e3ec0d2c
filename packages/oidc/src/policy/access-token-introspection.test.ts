import { createManualClock, type JwtClaims } from '@idt/core';
import { ProblemError, UnauthorizedError } from '@idt/problem';
import { describe, expect, it } from 'vitest';
import { createAccessTokenIntrospection } from './access-token-introspection.js';

const NOW = 1_800_000_000;
const claims: JwtClaims = {
  iss: 'https://id.example',
  sub: 'user-1',
  aud: 'https://id.example',
  iat: NOW - 60,
  exp: NOW + 840,
  jti: 'jti-1',
  client_id: 'app-1',
  azp: 'app-1',
  scope: 'openid users.read',
  org_id: 'org-1',
  sid: 'sid-1',
  idt_grant: 'grant-1',
};

function introspection(check: (token: string) => Promise<{ claims: JwtClaims }>) {
  return createAccessTokenIntrospection({ check, clock: createManualClock(NOW * 1000) });
}

describe('introspection of JWT access tokens', () => {
  it('answers an accepted token to the client it was issued to with the RFC 7662 members', async () => {
    const seen: string[] = [];
    const introspect = introspection(async (token) => {
      seen.push(token);
      return { claims };
    });
    expect(await introspect({ clientId: 'app-1' }, 'the-token')).toEqual({
      active: true,
      token_type: 'Bearer',
      client_id: 'app-1',
      sub: 'user-1',
      scope: 'openid users.read',
      org_id: 'org-1',
      exp: NOW + 840,
      iat: NOW - 60,
      iss: 'https://id.example',
      aud: 'https://id.example',
      jti: 'jti-1',
      sid: 'sid-1',
    });
    expect(seen).toEqual(['the-token']);
  });

  it('names the client by azp when the token has no client_id, and leaves out what the token lacks', async () => {
    const { client_id: _clientId, sid: _sid, org_id: _org, jti: _jti, scope: _scope, ...rest } = claims;
    const introspect = introspection(async () => ({ claims: rest as JwtClaims }));
    const answer = await introspect({ clientId: 'app-1' }, 't');
    expect(answer).toEqual({
      active: true,
      token_type: 'Bearer',
      client_id: 'app-1',
      sub: 'user-1',
      exp: NOW + 840,
      iat: NOW - 60,
      iss: 'https://id.example',
      aud: 'https://id.example',
    });
  });

  it('tells another client nothing', async () => {
    const introspect = introspection(async () => ({ claims }));
    expect(await introspect({ clientId: 'app-2' }, 't')).toEqual({ active: false });
    const anonymous = introspection(async () => ({ claims: { ...claims, client_id: undefined, azp: undefined } }));
    expect(await anonymous({ clientId: 'app-1' }, 't')).toEqual({ active: false });
  });

  it('answers inactive for every token the bearer check refuses', async () => {
    for (const error of [
      new UnauthorizedError('The token was revoked (session).'),
      new ProblemError('Tenant.Forbidden', 'The caller is not an active member of this organization.'),
    ]) {
      const introspect = introspection(async () => {
        throw error;
      });
      expect(await introspect({ clientId: 'app-1' }, 't')).toEqual({ active: false });
    }
  });

  it('reads the expiry against the issuer clock, without the resource servers’ skew', async () => {
    const introspect = introspection(async () => ({ claims: { ...claims, exp: NOW } }));
    expect(await introspect({ clientId: 'app-1' }, 't')).toEqual({ active: false });
    const later = introspection(async () => ({ claims: { ...claims, exp: NOW + 1 } }));
    expect(await later({ clientId: 'app-1' }, 't')).toMatchObject({ active: true });
  });

  it('throws what is not a refusal (a database outage)', async () => {
    const outage = new Error('connect ECONNREFUSED');
    const introspect = introspection(async () => {
      throw outage;
    });
    await expect(introspect({ clientId: 'app-1' }, 't')).rejects.toBe(outage);
  });
});
