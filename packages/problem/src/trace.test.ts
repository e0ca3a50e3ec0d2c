import { describe, expect, it } from 'vitest';
import { newTraceId, resolveTraceId, traceIdFromTraceparent } from './index.js';

describe('trace ids', () => {
  it('takes the trace id of a valid W3C traceparent', () => {
    expect(traceIdFromTraceparent('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01')).toBe(
      '4bf92f3577b34da6a3ce929d0e0e4736',
    );
    expect(traceIdFromTraceparent('01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-future')).toBe(
      '4bf92f3577b34da6a3ce929d0e0e4736',
    );
  });

  it('ignores invalid traceparents', () => {
    for (const header of [
      undefined,
      '',
      'garbage',
      'ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      '00-00000000000000000000000000000000-00f067aa0ba902b7-01',
      '00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01',
      '00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01',
      '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra',
    ]) {
      expect(traceIdFromTraceparent(header)).toBeUndefined();
    }
  });

  it('creates a fresh 32-hex id otherwise', () => {
    const id = resolveTraceId('nonsense');
    expect(id).toMatch(/^[0-9a-f]{32}$/);
    expect(newTraceId()).not.toBe(newTraceId());
  });
});
