import { scopeProviderRequestContext } from './patches.js';

/** The oidc-provider module. */
export type OidcProviderModule = typeof import('oidc-provider');

let loaded: Promise<OidcProviderModule> | undefined;

/**
 * Loads oidc-provider once. Its import-time notice about Node.js 20 (it
 * recommends 22) is dropped: idt supports and tests Node.js 20.19 and later.
 * Its request context is scoped to the requests it serves
 * (`scopeProviderRequestContext`).
 */
export function loadOidcProvider(): Promise<OidcProviderModule> {
  loaded ??= (async () => {
    const warn = console.warn;
    console.warn = (...args: unknown[]) => {
      if (typeof args[0] === 'string' && args[0].includes('Unsupported runtime')) return;
      warn(...args);
    };
    try {
      const module = await import('oidc-provider');
      // Its request context's async hooks are on only while it serves a request (patches.ts, patch 0).
      await scopeProviderRequestContext();
      return module;
    } finally {
      console.warn = warn;
    }
  })();
  return loaded;
}
