import { describe, expect, it } from 'vitest';
import '../problems.js';
import { fileTooLarge, formatByteCount } from './service.js';

describe('byte counts in messages', () => {
  it('are written with a comma between thousands, as en-US writes them', () => {
    for (const bytes of [0, 7, 999, 1000, 65_536, 999_999, 1_000_000, 10_485_760, 5_368_709_120, Number.MAX_SAFE_INTEGER]) {
      expect(formatByteCount(bytes)).toBe(bytes.toLocaleString('en-US'));
    }
    expect(formatByteCount(1_048_576)).toBe('1,048,576');
  });

  it('name the limit in the problem of a file too large', () => {
    expect(fileTooLarge(10_485_760).detail).toBe('The upload is larger than the limit of 10,485,760 bytes.');
  });
});
