import { randomBytes } from 'node:crypto';
import { normalizeDomain } from './domain-name.js';
import type { TxtResolver } from './txt-resolver.js';

/** The prefix of every verification record: `idt-verification=<token>`. */
export const VERIFICATION_PREFIX = 'idt-verification=';

/** The outcome of a verification. */
export type DomainVerification =
  | { readonly status: 'verified'; readonly domain: string }
  | { readonly status: 'not-found'; readonly domain: string }
  | { readonly status: 'dns-error'; readonly domain: string; readonly code: string };

/** Options of {@link createDomainVerifier}. */
export interface DomainVerifierOptions {
  /** Where TXT records are looked up. */
  readonly resolver: TxtResolver;
  /** Randomness for tokens; `crypto.randomBytes` by default. */
  readonly randomBytes?: (size: number) => Buffer;
}

/** Proves control of a domain by a TXT record at its apex. */
export interface DomainVerifier {
  /** A new record value to publish: `idt-verification=` and 32 random bytes in base64url. */
  createToken(): string;
  /**
   * Whether a TXT record at `domain` (normalised first) equals `token`.
   *
   * @throws ProblemError `Sso.InvalidDomain` for a name that is not a domain
   */
  verify(domain: string, token: string): Promise<DomainVerification>;
}

/**
 * Builds a domain verifier over a resolver port.
 *
 * @example
 * const verifier = createDomainVerifier({ resolver: createDnsTxtResolver() });
 * const token = verifier.createToken(); // show it: "add a TXT record example.com → idt-verification=..."
 * const outcome = await verifier.verify('example.com', token);
 */
export function createDomainVerifier(options: DomainVerifierOptions): DomainVerifier {
  const random = options.randomBytes ?? randomBytes;
  return {
    createToken: () => `${VERIFICATION_PREFIX}${random(32).toString('base64url')}`,

    async verify(input, token) {
      const domain = normalizeDomain(input);
      const lookup = await options.resolver.resolveTxt(domain);
      if (lookup.status === 'error') return { status: 'dns-error', domain, code: lookup.code };
      const expected = token.trim();
      const found =
        lookup.status === 'found' &&
        expected.startsWith(VERIFICATION_PREFIX) &&
        expected.length > VERIFICATION_PREFIX.length &&
        lookup.records.some((record) => record.trim() === expected);
      return found ? { status: 'verified', domain } : { status: 'not-found', domain };
    },
  };
}
