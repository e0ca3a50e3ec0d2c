import { isIP } from 'node:net';
import { domainToASCII } from 'node:url';
import { ProblemError } from '@idt/problem';
import '../problems.js';

const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;

/**
 * Normalises a domain name an organization claims: trimmed, one trailing
 * dot dropped, lowercase, internationalised names in their ASCII (punycode)
 * form through `domainToASCII`. Refuses IP literals (including the
 * shorthand forms the URL parser turns into addresses, such as `127.1`),
 * single-label names, ports, paths, underscores and labels that are empty,
 * over 63 characters or start or end with a hyphen. Whether the name is a
 * public suffix is not checked.
 *
 * @throws ProblemError `Sso.InvalidDomain`
 *
 * @example
 * normalizeDomain('Bücher.Example.'); // 'xn--bcher-kva.example'
 */
export function normalizeDomain(input: string): string {
  const invalid = (detail: string) => new ProblemError('Sso.InvalidDomain', detail);
  let name = input.trim();
  if (name.endsWith('.')) name = name.slice(0, -1);
  if (name === '' || name.length > 253) throw invalid('Enter a domain name of at most 253 characters.');
  if (isIP(name) !== 0 || name.startsWith('[')) throw invalid('Enter a domain name, not an IP address.');
  if (/[\s/\\:@?#%_*]/.test(name) || name.includes('..') || name.startsWith('.')) {
    throw invalid('Enter only a domain name, such as example.com.');
  }
  const ascii = domainToASCII(name.toLowerCase());
  if (ascii === '') throw invalid('This is not a valid domain name.');
  if (isIP(ascii) !== 0) throw invalid('Enter a domain name, not an IP address.');
  if (ascii.length > 253) throw invalid('Enter a domain name of at most 253 characters.');
  const labels = ascii.split('.');
  if (labels.length < 2) throw invalid('Enter a full domain name, such as example.com.');
  if (!labels.every((label) => LABEL.test(label))) throw invalid('This is not a valid domain name.');
  if (/^\d+$/.test(labels[labels.length - 1] ?? '')) throw invalid('Enter a domain name, not an IP address.');
  return ascii;
}
