import { describe, expect, it } from 'vitest';
import { compareCodeUnits } from './compare.js';

describe('compareCodeUnits', () => {
  it('orders by UTF-16 code units, as sort() does by default', () => {
    const names = ['b_last', 'a_second', 'B_first', 'a-dash', 'a.dot', '0001_x', 'é', 'z', 'Z', ''];
    expect([...names].sort(compareCodeUnits)).toEqual([...names].sort());
    expect(compareCodeUnits('same', 'same')).toBe(0);
    expect(compareCodeUnits('2026-03-01T10:00:00.000Z', '2026-03-01T09:59:59.999Z')).toBe(1);
  });
});
