import { createManualClock } from '@idt/core';
import type { KoaContextWithOIDC } from 'oidc-provider';
import { describe, expect, it } from 'vitest';
import { loadOidcProvider } from '../provider/load.js';
import {
  ACR_MFA,
  ACR_ONE_FACTOR,
  acrOf,
  asksMfa,
  authenticationPolicy,
  MFA_ACR_CHECK,
  mergeAmr,
} from './authentication-context.js';

describe('acr and amr', () => {
  it('is mfa exactly when amr holds mfa', () => {
    expect(acrOf(['pwd'])).toBe(ACR_ONE_FACTOR);
    expect(acrOf(['otp'])).toBe(ACR_ONE_FACTOR);
    expect(acrOf(['pwd', 'otp', 'mfa'])).toBe(ACR_MFA);
    expect(acrOf(['hwk', 'mfa'])).toBe(ACR_MFA);
  });

  it('merges methods in order, each once', () => {
    expect(mergeAmr(['otp'], ['otp', 'mfa'])).toEqual(['otp', 'mfa']);
    expect(mergeAmr(['pwd'], ['otp', 'mfa'])).toEqual(['pwd', 'otp', 'mfa']);
  });

  it('reads the MFA acr from acr_values or the claims parameter, and nothing else', () => {
    expect(asksMfa({ acr_values: `${ACR_ONE_FACTOR} ${ACR_MFA}` })).toBe(true);
    expect(asksMfa({ acr_values: ACR_ONE_FACTOR })).toBe(false);
    expect(asksMfa({})).toBe(false);
    expect(asksMfa({ claims: JSON.stringify({ id_token: { acr: { essential: true, values: [ACR_MFA] } } }) })).toBe(true);
    expect(asksMfa({ claims: { id_token: { acr: { value: ACR_MFA } } } })).toBe(true);
    expect(asksMfa({ claims: '{not json' })).toBe(false);
    expect(asksMfa({ claims: JSON.stringify({ userinfo: { acr: { value: ACR_MFA } } }) })).toBe(false);
  });
});

describe('the login prompt checks', () => {
  const clock = createManualClock(1_800_000_000_000);
  const now = 1_800_000_000;

  /** The reasons the login prompt's checks give for a request with this session, parameters and result. */
  async function reasons(
    session: { accountId?: string; acr?: string; loginTs?: number },
    params: Record<string, unknown>,
    result?: Record<string, unknown>,
  ): Promise<string[]> {
    const policy = authenticationPolicy(await loadOidcProvider(), clock);
    const login = policy.get('login');
    const ctx = {
      oidc: {
        params,
        result,
        prompts: new Set<string>(),
        session: { ...session, authTime: () => session.loginTs },
        claims: {},
        entities: {},
      },
    } as unknown as KoaContextWithOIDC;
    const out: string[] = [];
    for (const check of login?.checks ?? []) {
      if (
        ['login_prompt', 'id_token_hint', 'claims_id_token_sub_value', 'essential_acrs', 'essential_acr'].includes(check.reason)
      )
        continue;
      if (await check.check(ctx)) out.push(check.reason);
    }
    return out;
  }

  it('asks a login past max_age on the injected clock, and always with max_age=0', async () => {
    const session = { accountId: 'u', acr: ACR_ONE_FACTOR, loginTs: now - 100 };
    expect(await reasons(session, { max_age: 120 })).toEqual([]);
    expect(await reasons(session, { max_age: 60 })).toEqual(['max_age']);
    expect(await reasons({ ...session, loginTs: now }, { max_age: 0 })).toEqual(['max_age']);
    // The login just done in this authorization never asks again.
    expect(await reasons({ ...session, loginTs: now }, { max_age: 0 }, { login: {} })).toEqual([]);
  });

  it('asks a login of a one-factor session when the client asks the MFA acr', async () => {
    expect(await reasons({ accountId: 'u', acr: ACR_ONE_FACTOR, loginTs: now }, { acr_values: ACR_MFA })).toEqual([
      MFA_ACR_CHECK,
    ]);
    expect(await reasons({ accountId: 'u', acr: ACR_MFA, loginTs: now }, { acr_values: ACR_MFA })).toEqual([]);
    expect(await reasons({ accountId: 'u', acr: ACR_ONE_FACTOR, loginTs: now }, {})).toEqual([]);
    expect(await reasons({ accountId: 'u', acr: ACR_ONE_FACTOR, loginTs: now }, { acr_values: ACR_MFA }, { login: {} })).toEqual(
      [],
    );
    expect(await reasons({}, { acr_values: ACR_MFA })).toEqual(['no_session']);
  });
});
