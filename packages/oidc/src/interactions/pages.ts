import { escapeHtml } from '@idt/core';
import type { KoaContextWithOIDC } from 'oidc-provider';
import { applyPageSecurityHeaders } from '../policy/security-headers.js';

/** A client's look on the sign-in pages. */
export interface PageBranding {
  readonly displayName: string;
  readonly tagline?: string | null;
  /** A `data:` URL. */
  readonly logo?: string | null;
  /** URL of a stylesheet with the client's theme colors. */
  readonly themeStylesheet?: string | null;
}

/** What every page needs. */
export interface PageOptions {
  readonly title: string;
  /** Base path of the sign-in assets, e.g. `/connect/assets` (prefix included). */
  readonly assets: string;
  readonly branding?: PageBranding;
  /** Extra scripts, served from the assets path (never inline). */
  readonly scripts?: readonly string[];
  /** `<meta http-equiv="refresh">` target and delay. */
  readonly refresh?: { readonly url: string; readonly seconds: number };
}

/** Renders a complete sign-in page around `body`. */
export function renderPage(options: PageOptions, body: string): string {
  const branding = options.branding;
  const header = branding
    ? `<header class="brand">
  ${branding.logo ? `<img class="logo" src="${escapeHtml(branding.logo)}" alt="" width="48" height="48">` : ''}
  <p class="client">${escapeHtml(branding.displayName)}</p>
  ${branding.tagline ? `<p class="tagline">${escapeHtml(branding.tagline)}</p>` : ''}
</header>`
    : '';
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
${options.refresh ? `<meta http-equiv="refresh" content="${options.refresh.seconds};url=${escapeHtml(options.refresh.url)}">` : ''}
<title>${escapeHtml(options.title)}</title>
<link rel="stylesheet" href="${escapeHtml(options.assets)}/idt.css">
${branding?.themeStylesheet ? `<link rel="stylesheet" href="${escapeHtml(branding.themeStylesheet)}">` : ''}
${(options.scripts ?? []).map((script) => `<script src="${escapeHtml(options.assets)}/${escapeHtml(script)}" defer></script>`).join('\n')}
</head>
<body>
<main class="card">
${header}
${body}
</main>
</body>
</html>
`;
}

/** An error summary at the top of a form, announced to assistive technology. */
export function errorSummary(messages: readonly string[]): string {
  if (messages.length === 0) return '';
  return `<div class="error" role="alert" id="error-summary" tabindex="-1">
<h2>There is a problem</h2>
<ul>${messages.map((message) => `<li>${escapeHtml(message)}</li>`).join('')}</ul>
</div>`;
}

/** A notice (success or information), announced politely. */
export function notice(message: string | undefined): string {
  return message ? `<p class="notice" role="status">${escapeHtml(message)}</p>` : '';
}

/** The stylesheet of the sign-in pages. */
export const STYLESHEET = `:root{--primary:#1f4fd1;--primary-foreground:#fff;--bg:#f5f6f8;--fg:#1b1d21;--muted:#5b6170;--card:#fff;--border:#c9ced8;--error:#b42318;color-scheme:light dark}
@media (prefers-color-scheme:dark){:root{--bg:#111318;--fg:#eceef2;--muted:#a3a9b6;--card:#1b1e25;--border:#3a404d;--error:#ff8a80}}
*{box-sizing:border-box}body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:var(--bg);color:var(--fg)}
.card{max-width:26rem;margin:3rem auto;padding:2rem;background:var(--card);border:1px solid var(--border);border-radius:.75rem}
h1{font-size:1.5rem;margin:0 0 1rem}h2{font-size:1.05rem;margin:0 0 .5rem}
.brand{text-align:center;margin-bottom:1.5rem}.brand .logo{border-radius:.5rem}.brand .client{font-weight:600;margin:.5rem 0 0}.brand .tagline{color:var(--muted);margin:.25rem 0 0}
label{display:block;font-weight:600;margin:1rem 0 .25rem}input[type=email],input[type=password],input[type=text]{width:100%;padding:.6rem .7rem;font:inherit;color:inherit;background:transparent;border:1px solid var(--border);border-radius:.4rem}
input:focus-visible,button:focus-visible,a:focus-visible{outline:3px solid var(--primary);outline-offset:2px}
button{display:block;width:100%;margin-top:1.25rem;padding:.65rem 1rem;font:inherit;font-weight:600;border:0;border-radius:.4rem;background:var(--primary);color:var(--primary-foreground);cursor:pointer}
button.secondary{background:transparent;color:var(--fg);border:1px solid var(--border)}
.links{margin-top:1.5rem;display:flex;flex-direction:column;gap:.5rem}a{color:var(--primary)}
.hint{color:var(--muted);font-size:.9rem;margin:.25rem 0 0}.error{border:2px solid var(--error);border-radius:.4rem;padding:.75rem 1rem;margin-bottom:1rem}.error h2{color:var(--error)}
.notice{border-left:4px solid var(--primary);padding:.5rem .75rem}ul.scopes{padding-left:1.2rem}
fieldset{border:0;padding:0;margin:0}legend{font-weight:600;margin-bottom:.5rem}.choice{display:flex;gap:.5rem;align-items:center;margin:.4rem 0}
.frames{position:absolute;width:0;height:0;overflow:hidden}.frames iframe{width:0;height:0;border:0}
.sr-only{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0)}
`;

/** Submits the logout form once when the request was confirmed by a valid id_token_hint. */
export const AUTOSUBMIT_SCRIPT = `document.addEventListener('DOMContentLoaded',function(){var f=document.querySelector('form[data-autosubmit]');if(f){var b=f.querySelector('button[value=yes]');if(b){b.click();}}});
`;

/** Moves focus to the error summary, so screen readers announce it. */
export const FOCUS_SCRIPT = `document.addEventListener('DOMContentLoaded',function(){var e=document.getElementById('error-summary');if(e){e.focus();}});
`;

/** The assets path the provider's own pages use (set when the module is wired). */
let providerAssets = '/connect/assets';

/** Sets where the provider's pages load their stylesheet from. */
export function setProviderAssetsPath(path: string): void {
  providerAssets = path;
}

/** Renders oidc-provider errors shown to the user agent (never the internal details of 5xx). */
export async function renderProviderError(
  ctx: KoaContextWithOIDC,
  out: { error?: string; error_description?: string },
  error: unknown,
) {
  const status = (error as { status?: number; statusCode?: number })?.status ?? ctx.status ?? 500;
  const isServerError = status >= 500;
  ctx.type = 'html';
  applyPageSecurityHeaders(ctx);
  ctx.body = renderPage(
    { title: 'Sign-in problem', assets: providerAssets },
    `<h1>Sign-in problem</h1>
<p>${escapeHtml(
      isServerError
        ? 'The service could not complete the request; try again later.'
        : (out.error_description ?? 'The sign-in request is invalid or has expired.'),
    )}</p>
${isServerError ? '' : `<p class="hint">Error code: <code>${escapeHtml(out.error ?? 'invalid_request')}</code></p>`}
<p class="hint">Go back to the application and start the sign-in again.</p>`,
  );
}

/** The page of a request that failed because the database is unreachable (answered with 503 and `Retry-After`). */
export function renderUnavailablePage(assets: string): string {
  return renderPage(
    { title: 'Temporarily unavailable', assets },
    '<h1>Temporarily unavailable</h1><p>The service cannot reach its database right now. Try again in a moment.</p>',
  );
}
