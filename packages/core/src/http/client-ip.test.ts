import { describe, expect, it } from 'vitest';
import { clientIpOf } from './client-ip.js';

describe('clientIpOf', () => {
  it('takes the first X-Forwarded-For entry only from a trusted proxy', () => {
    expect(clientIpOf('203.0.113.5, 10.0.0.1', '10.0.0.1', true)).toBe('203.0.113.5');
    expect(clientIpOf(['203.0.113.5', '198.51.100.1'], '10.0.0.1', true)).toBe('203.0.113.5');
    expect(clientIpOf('203.0.113.5', '10.0.0.1', false)).toBe('10.0.0.1');
  });

  it('falls back to the peer address when the header is missing or blank', () => {
    expect(clientIpOf(null, '10.0.0.1', true)).toBe('10.0.0.1');
    expect(clientIpOf(' , x', '10.0.0.1', true)).toBe('10.0.0.1');
    expect(clientIpOf(undefined, undefined, true)).toBeUndefined();
  });
});
