import { joinMarkup, markup } from '@idt/core';
import { renderPage } from '../interactions/pages.js';
import { pageSecurityHeaders } from '../policy/security-headers.js';

/** A client to notify through the browser. */
export interface FrontchannelTarget {
  readonly clientId: string;
  readonly frontchannelLogoutUri: string;
}

/** The front-channel logout URI of a client with `iss` and `sid` appended (OpenID Connect Front-Channel Logout 1.0). */
export function frontchannelUrl(uri: string, issuer: string, sid: string): string {
  const url = new URL(uri);
  url.searchParams.set('iss', issuer);
  url.searchParams.set('sid', sid);
  return url.href;
}

/**
 * The logout interstitial (SPEC 4.3): loads each client's front-channel
 * logout URI in a hidden frame with `iss` and `sid`, then continues to the
 * post-logout redirect (meta refresh, plus a link for when that is blocked).
 * No script: the frames load on their own.
 */
export function renderFrontchannelPage(options: {
  readonly assets: string;
  readonly issuer: string;
  readonly sid: string;
  readonly targets: readonly FrontchannelTarget[];
  readonly continueTo: string;
}): { html: string; headers: Record<string, string> } {
  const urls = options.targets.map((target) => frontchannelUrl(target.frontchannelLogoutUri, options.issuer, options.sid));
  const html = renderPage(
    { title: 'Signing out', assets: options.assets, refresh: { url: options.continueTo, seconds: 2 } },
    markup`<h1>Signing you out</h1>
<p role="status">Signing you out of every application…</p>
<p><a href="${options.continueTo}">Continue</a></p>
<div class="frames" aria-hidden="true">
${joinMarkup(
  urls.map(
    (url) => markup`<iframe src="${url}" title="Sign-out" tabindex="-1" sandbox="allow-same-origin allow-scripts"></iframe>`,
  ),
  '\n',
)}
</div>`,
  );
  return { html, headers: pageSecurityHeaders({ frameTargets: urls }) };
}
