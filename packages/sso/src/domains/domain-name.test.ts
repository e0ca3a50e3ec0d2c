import { ProblemError } from '@idt/problem';
import { describe, expect, it } from 'vitest';
import { normalizeDomain } from './domain-name.js';

describe('normalizeDomain', () => {
  it('lowercases, drops one trailing dot and turns IDNs into punycode', () => {
    expect(normalizeDomain('  Example.COM. ')).toBe('example.com');
    expect(normalizeDomain('Bücher.example')).toBe('xn--bcher-kva.example');
    expect(normalizeDomain('xn--bcher-kva.example')).toBe('xn--bcher-kva.example');
    expect(normalizeDomain('mail.eu.acme-corp.co.uk')).toBe('mail.eu.acme-corp.co.uk');
    expect(normalizeDomain('com.au')).toBe('com.au'); // public suffixes are not checked
  });

  it('refuses IP literals, single labels, addresses and malformed names', () => {
    for (const input of [
      '127.0.0.1',
      '127.1',
      '0x7f.1',
      '[::1]',
      '::1',
      'localhost',
      'example.com..',
      '.example.com',
      'exa mple.com',
      'ada@example.com',
      'example.com:443',
      'https://example.com',
      'example.com/path',
      '_dmarc.example.com',
      '-example.com',
      'example-.com',
      `${'a'.repeat(64)}.com`,
      '',
      '.',
    ]) {
      expect(() => normalizeDomain(input), input).toThrow(ProblemError);
    }
  });
});
