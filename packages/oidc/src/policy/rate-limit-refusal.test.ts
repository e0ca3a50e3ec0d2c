import { describe, expect, it } from 'vitest';
import { RATE_LIMIT_OAUTH_ERROR, rateLimitRefusal } from './rate-limit-refusal.js';

describe('rate-limit refusal of the provider endpoints', () => {
  it('is a RateLimit.Exceeded problem document that OAuth clients read as rate_limit_exceeded', () => {
    const refusal = rateLimitRefusal({ retryAfterSeconds: 42 }, '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01');
    expect(refusal.status).toBe(429);
    expect(refusal.headers).toEqual({
      'content-type': 'application/problem+json',
      'retry-after': '42',
      'cache-control': 'no-store',
      pragma: 'no-cache',
    });
    expect(refusal.body).toEqual({
      type: 'about:blank',
      title: 'Too Many Requests',
      status: 429,
      detail: 'Too many requests; retry in 42 seconds.',
      code: 'RateLimit.Exceeded',
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
      error: RATE_LIMIT_OAUTH_ERROR,
      error_description: 'Too many requests; retry in 42 seconds.',
    });
    expect(RATE_LIMIT_OAUTH_ERROR).toBe('rate_limit_exceeded');
  });

  it('gets a new trace id without a valid traceparent', () => {
    const first = rateLimitRefusal({ retryAfterSeconds: 1 }, undefined).body.traceId;
    const second = rateLimitRefusal({ retryAfterSeconds: 1 }, 'not-a-traceparent').body.traceId;
    expect(first).toMatch(/^[0-9a-f]{32}$/);
    expect(second).toMatch(/^[0-9a-f]{32}$/);
    expect(first).not.toBe(second);
  });
});
