import { ConfigError, loadConfig } from '@idt/core';
import { describe, expect, it } from 'vitest';
import { identity } from './module.js';

const config = loadConfig({ IDT_ENVIRONMENT: 'Testing' });
const resolve = (env: Record<string, string>, options = {}) => identity(options).settings?.resolve(env, config);

describe('identity() settings', () => {
  it('default to 3 e-mail change requests per hour and accept 0', () => {
    expect(resolve({})).toMatchObject({ emailChangeMaxRequests: 3, emailChangeWindowSeconds: 3600 });
    expect(resolve({ IDT_EMAIL_CHANGE_MAX_REQUESTS: '0' })?.emailChangeMaxRequests).toBe(0);
  });

  it('refuse a window that is not a positive whole number of seconds', () => {
    for (const value of ['0', '-60', 'soon', '1.5']) {
      expect(() => resolve({ IDT_EMAIL_CHANGE_WINDOW_SECONDS: value })).toThrow(/IDT_EMAIL_CHANGE_WINDOW_SECONDS/);
    }
  });

  it('take options over the environment', () => {
    expect(resolve({ IDT_EMAIL_CHANGE_MAX_REQUESTS: '9' }, { emailChangeMaxRequests: 1 })?.emailChangeMaxRequests).toBe(1);
  });

  it('report every invalid variable at once', () => {
    try {
      resolve({ IDT_EMAIL_CHANGE_MAX_REQUESTS: 'many', IDT_EMAIL_CHANGE_WINDOW_SECONDS: 'soon' });
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      expect((error as ConfigError).problems).toHaveLength(2);
    }
  });
});
