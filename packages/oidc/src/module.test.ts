import { loadConfig } from '@idt/core';
import { describe, expect, it } from 'vitest';
import { oidc } from './module.js';

const config = loadConfig({ IDT_ENVIRONMENT: 'Testing' });
const resolve = (env: Record<string, string>, options = {}) => oidc(options).settings?.resolve(env, config);

describe('oidc() settings', () => {
  it('default to SPEC 5.3 lifetimes and a 30 s reuse leeway', () => {
    expect(resolve({})).toEqual({
      accessTokenMinutes: 15,
      refreshReuseLeewaySeconds: 30,
      refreshTokenLifetimeSeconds: 604_800,
      backchannelAllowPrivateHosts: false,
    });
  });

  it('read the environment, and options win over it', () => {
    const env = { IDT_ACCESS_TOKEN_MINUTES: '5', IDT_BACKCHANNEL_ALLOW_PRIVATE_HOSTS: 'yes' };
    expect(resolve(env)).toMatchObject({ accessTokenMinutes: 5, backchannelAllowPrivateHosts: true });
    expect(resolve(env, { accessTokenMinutes: 1 })).toMatchObject({ accessTokenMinutes: 1 });
  });

  it('refuse values out of range, naming each variable', () => {
    expect(() => resolve({ IDT_ACCESS_TOKEN_MINUTES: '0', IDT_REFRESH_TOKEN_LIFETIME_SECONDS: '10' })).toThrow(
      /IDT_ACCESS_TOKEN_MINUTES[\s\S]*IDT_REFRESH_TOKEN_LIFETIME_SECONDS/,
    );
    expect(() => resolve({ IDT_BACKCHANNEL_ALLOW_PRIVATE_HOSTS: 'maybe' })).toThrow(/must be true or false/);
  });
});
