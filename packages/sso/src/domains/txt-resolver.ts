import { Resolver } from 'node:dns/promises';

/** The answer to a TXT lookup. */
export type TxtLookup =
  | { readonly status: 'found'; readonly records: readonly string[] }
  | { readonly status: 'not-found' }
  | { readonly status: 'error'; readonly code: string };

/** Looks up TXT records; the port the domain verifier asks. */
export interface TxtResolver {
  /** The TXT records of `name`, each one's character strings joined. Never throws. */
  resolveTxt(name: string): Promise<TxtLookup>;
}

/** Options of {@link createDnsTxtResolver}. */
export interface DnsTxtResolverOptions {
  /** The DNS servers to ask (`'1.1.1.1'`, `'127.0.0.1:5353'`, `'[::1]:53'`); the system's by default. */
  readonly servers?: readonly string[];
  /** The longest a lookup may take, in milliseconds: 5 seconds by default. */
  readonly timeoutMs?: number;
}

const NOT_FOUND = new Set(['ENOTFOUND', 'ENODATA']);

/**
 * A {@link TxtResolver} over node:dns's `Resolver`: no answer for the name
 * (NXDOMAIN) or no TXT record is `not-found`; a timeout, a refused or
 * failed server is `error` with the resolver's code, within `timeoutMs`
 * (the lookup is cancelled then if the resolver has not given up itself).
 *
 * @example
 * const resolver = createDnsTxtResolver({ servers: ['127.0.0.1:5300'], timeoutMs: 500 });
 */
export function createDnsTxtResolver(options: DnsTxtResolverOptions = {}): TxtResolver {
  const timeoutMs = options.timeoutMs ?? 5_000;
  return {
    async resolveTxt(name) {
      // One resolver per lookup, so cancelling a slow one cancels nothing else.
      const resolver = new Resolver({ timeout: timeoutMs, tries: 1 });
      if (options.servers) resolver.setServers([...options.servers]);
      const timer = setTimeout(() => resolver.cancel(), timeoutMs);
      try {
        const records = await resolver.resolveTxt(name);
        return { status: 'found', records: records.map((chunks) => chunks.join('')) };
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code ?? 'EUNKNOWN';
        return NOT_FOUND.has(code) ? { status: 'not-found' } : { status: 'error', code };
      } finally {
        clearTimeout(timer);
      }
    },
  };
}
