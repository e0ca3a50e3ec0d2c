import { LightResponse } from '@idt/core';
import type { StoredClient } from '../clients/store.js';
import { plainText } from './interaction.js';
import { AUTOSUBMIT_SCRIPT, FOCUS_SCRIPT, STYLESHEET } from './pages.js';
import { PASSKEY_SCRIPT } from './passkey-script.js'; // D: passkeys

const ASSET_HEADERS = { 'cache-control': 'public, max-age=3600', 'x-content-type-options': 'nosniff' } as const;

/** The sign-in pages' stylesheet and scripts, by path below the assets base; `undefined` for any other path. */
export function signInAsset(method: string, path: string): LightResponse | undefined {
  const body = method === 'HEAD' ? null : undefined;
  if (path === '/idt.css') {
    return new LightResponse(body === null ? null : STYLESHEET, {
      headers: { ...ASSET_HEADERS, 'content-type': 'text/css; charset=utf-8' },
    });
  }
  if (path === '/autosubmit.js' || path === '/focus.js') {
    return new LightResponse(body === null ? null : path === '/focus.js' ? FOCUS_SCRIPT : AUTOSUBMIT_SCRIPT, {
      headers: { ...ASSET_HEADERS, 'content-type': 'text/javascript; charset=utf-8' },
    });
  }
  // D: passkeys
  if (path === '/passkey.js') {
    return new LightResponse(body === null ? null : PASSKEY_SCRIPT, {
      headers: { ...ASSET_HEADERS, 'content-type': 'text/javascript; charset=utf-8' },
    });
  }
  return undefined;
}

/**
 * The theme colors of the pending sign-in's client. Served under the
 * interaction (its cookie is required), so there is no anonymous read of
 * branding by client id (SPEC 4.3).
 */
export function themeStylesheet(client: StoredClient | undefined): LightResponse {
  const colors = client?.branding?.themeJson;
  if (!colors) return plainText(404, 'Not Found', { 'cache-control': 'no-store' });
  const css = `:root{--primary:${colors.light.primary};--primary-foreground:${colors.light.primaryForeground}}
@media (prefers-color-scheme:dark){:root{--primary:${colors.dark.primary};--primary-foreground:${colors.dark.primaryForeground}}}
`;
  return new LightResponse(css, {
    headers: {
      'content-type': 'text/css; charset=utf-8',
      'cache-control': 'private, max-age=3600',
      'x-content-type-options': 'nosniff',
    },
  });
}
