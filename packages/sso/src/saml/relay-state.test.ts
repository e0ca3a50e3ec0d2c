import { describe, expect, it } from 'vitest';
import { safeRelayState } from './relay-state.js';

const origin = 'https://id.example.com';

describe('safeRelayState', () => {
  it('keeps same-origin paths and absolute URLs of the origin, as paths', () => {
    expect(safeRelayState('/account?tab=security#keys', origin)).toBe('/account?tab=security#keys');
    expect(safeRelayState('https://id.example.com/projects/7', origin)).toBe('/projects/7');
    expect(safeRelayState('projects/7', origin)).toBe('/projects/7');
  });

  it('drops anything that can leave the origin', () => {
    for (const value of [
      'https://evil.example/',
      '//evil.example/x',
      '/\\evil.example/x',
      '\\\\evil.example',
      'javascript:alert(1)',
      'http://id.example.com/downgraded',
      'https://id.example.com.evil.example/',
      '/ok\r\nLocation: https://evil.example',
      'x'.repeat(1025),
      '',
      undefined,
      null,
    ]) {
      expect(safeRelayState(value, origin)).toBeUndefined();
    }
  });
});
