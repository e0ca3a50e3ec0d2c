import { describe, expect, it } from 'vitest';
import { createClamAvScanner, parseClamdReply } from './clamav.js';

describe('parseClamdReply', () => {
  it('reads OK, FOUND and errors', () => {
    expect(parseClamdReply('stream: OK\0')).toEqual({ clean: true });
    expect(parseClamdReply('stream: Win.Test.EICAR_HDB-1 FOUND\0')).toEqual({ clean: false, signature: 'Win.Test.EICAR_HDB-1' });
    expect(parseClamdReply('1: stream: OK')).toEqual({ clean: true });
    expect(() => parseClamdReply('INSTREAM size limit exceeded. ERROR\0')).toThrow(/size limit/);
    expect(() => parseClamdReply('')).toThrow();
  });

  it('accepts only tcp://host:port', () => {
    expect(() => createClamAvScanner({ url: 'http://127.0.0.1:3310' })).toThrow(TypeError);
    expect(() => createClamAvScanner({ url: 'tcp://127.0.0.1' })).toThrow(TypeError);
    expect(createClamAvScanner({ url: 'tcp://127.0.0.1:3310' }).kind).toBe('clamav');
  });
});
