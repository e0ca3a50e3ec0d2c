import { IDT_ICON_LINK, joinMarkup, type Logger, markup, type SafeHtml, silentLogger, unsafeRaw } from '@idt/core';
import { newTraceId, traceIdFromTraceparent } from '@idt/problem';
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
  /** A wider card (the account page's lists). */
  readonly wide?: boolean;
}

/** idt's icon link, a constant of `@idt/core`. */
const ICON_LINK = unsafeRaw(IDT_ICON_LINK);

/** Renders a complete sign-in page around `body`. */
export function renderPage(options: PageOptions, body: SafeHtml | string): string {
  // TEMPORARY (h48c step 2 to 3): string bodies of the pages not yet on markup.
  if (typeof body === 'string') body = unsafeRaw(body);
  const branding = options.branding;
  const header =
    branding &&
    markup`<header class="brand">
  ${branding.logo && markup`<img class="logo" src="${branding.logo}" alt="" width="48" height="48">`}
  <p class="client">${branding.displayName}</p>
  ${branding.tagline && markup`<p class="tagline">${branding.tagline}</p>`}
</header>`;
  const scripts = (options.scripts ?? []).map((script) => markup`<script src="${options.assets}/${script}" defer></script>`);
  return markup`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
${options.refresh && markup`<meta http-equiv="refresh" content="${options.refresh.seconds};url=${options.refresh.url}">`}
<title>${options.title}</title>
${ICON_LINK}
<link rel="stylesheet" href="${options.assets}/idt.css">
${branding?.themeStylesheet && markup`<link rel="stylesheet" href="${branding.themeStylesheet}">`}
${joinMarkup(scripts, '\n')}
</head>
<body>
<main class="card${options.wide ? ' wide' : ''}">
${header}
${body}
</main>
</body>
</html>
`.text;
}

/** An error summary at the top of a form, announced to assistive technology. */
export function errorSummary(messages: readonly string[]): SafeHtml {
  if (messages.length === 0) return EMPTY;
  return markup`<div class="error" role="alert" id="error-summary" tabindex="-1">
<h2>There is a problem</h2>
<ul>${messages.map((message) => markup`<li>${message}</li>`)}</ul>
</div>`;
}

/** A notice (success or information), announced politely. */
export function notice(message: string | undefined): SafeHtml {
  return message ? markup`<p class="notice" role="status">${message}</p>` : EMPTY;
}

const EMPTY = markup``;

/** The stylesheet of the sign-in pages. */
export const STYLESHEET = `:root{--primary:#1f4fd1;--primary-foreground:#fff;--bg:#f5f6f8;--fg:#1b1d21;--muted:#5b6170;--card:#fff;--border:#c9ced8;--error:#b42318;color-scheme:light dark}
@media (prefers-color-scheme:dark){:root{--primary:#8ab4f8;--primary-foreground:#111318;--bg:#111318;--fg:#eceef2;--muted:#a3a9b6;--card:#1b1e25;--border:#3a404d;--error:#ff8a80}}
*{box-sizing:border-box}body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:var(--bg);color:var(--fg)}
.card{max-width:26rem;margin:3rem auto;padding:2rem;background:var(--card);border:1px solid var(--border);border-radius:.75rem}
h1{font-size:1.5rem;margin:0 0 1rem}h2{font-size:1.05rem;margin:0 0 .5rem}
.brand{text-align:center;margin-bottom:1.5rem}.brand .logo{border-radius:.5rem}.brand .client{font-weight:600;margin:.5rem 0 0}.brand .tagline{color:var(--muted);margin:.25rem 0 0}
label{display:block;font-weight:600;margin:1rem 0 .25rem}input[type=email],input[type=password],input[type=text]{width:100%;padding:.6rem .7rem;font:inherit;color:inherit;background:transparent;border:1px solid var(--border);border-radius:.4rem}
input:focus-visible,button:focus-visible,a:focus-visible{outline:3px solid var(--primary);outline-offset:2px}
button{display:block;width:100%;margin-top:1.25rem;padding:.65rem 1rem;font:inherit;font-weight:600;border:0;border-radius:.4rem;background:var(--primary);color:var(--primary-foreground);cursor:pointer}
button.secondary{background:transparent;color:var(--fg);border:1px solid var(--border)}
a.button{display:block;margin-top:1.25rem;padding:.65rem 1rem;font-weight:600;text-align:center;text-decoration:none;border-radius:.4rem;background:var(--primary);color:var(--primary-foreground)}a.button.secondary{background:transparent;color:var(--fg);border:1px solid var(--border)}.federation{margin-top:1.25rem}.federation a.button{margin-top:.5rem}
.links{margin-top:1.5rem;display:flex;flex-direction:column;gap:.5rem}a{color:var(--primary)}
.hint{color:var(--muted);font-size:.9rem;margin:.25rem 0 0}.error{border:2px solid var(--error);border-radius:.4rem;padding:.75rem 1rem;margin-bottom:1rem}.error h2{color:var(--error)}
.notice{border-left:4px solid var(--primary);padding:.5rem .75rem}ul.scopes{padding-left:1.2rem}
fieldset{border:0;padding:0;margin:0}legend{font-weight:600;margin-bottom:.5rem}.choice{display:flex;gap:.5rem;align-items:center;margin:.4rem 0}
.frames{position:absolute;width:0;height:0;overflow:hidden}.frames iframe{width:0;height:0;border:0}
.facts{display:grid;grid-template-columns:auto 1fr;gap:.25rem .75rem;margin:1rem 0;font-size:.9rem}.facts dt{color:var(--muted)}.facts dd{margin:0;word-break:break-all}
.card>h2,section>h2{margin-top:1.5rem}.account-list{list-style:none;padding:0;margin:0 0 1rem}.account-list li{display:flex;justify-content:space-between;align-items:center;gap:1rem;padding:.6rem 0;border-top:1px solid var(--border)}.account-list form{margin:0}.account-list button{width:auto;margin:0;padding:.35rem .8rem;white-space:nowrap}.card.wide{max-width:40rem}
.sr-only{position:absolute;width:1px;height:1px;overflow:hidden;clip:rect(0 0 0 0)}
.steps{padding-left:1.2rem}.steps li{margin:.5rem 0}img.qr{display:block;width:200px;max-width:100%;height:auto;margin:.75rem 0;background:#fff;border-radius:.25rem}code.secret{display:block;margin:.5rem 0;font:1rem/1.4 ui-monospace,SFMono-Regular,Menlo,monospace;word-break:break-all;user-select:all}ul.codes{display:grid;grid-template-columns:repeat(auto-fill,minmax(9.5rem,1fr));gap:.25rem 1rem;list-style:none;padding:0;margin:1rem 0;font-family:ui-monospace,SFMono-Regular,Menlo,monospace}fieldset.reauth{margin-top:1rem}
[hidden]{display:none!important}form.passkey{margin-top:1.25rem}.passkey-item{display:block!important}.passkey-item .actions{display:flex;flex-wrap:wrap;gap:.5rem 1rem;align-items:flex-end;margin-top:.5rem}.passkey-item form.rename{display:flex;flex-wrap:wrap;gap:.5rem;align-items:center;flex:1 1 16rem}.passkey-item form.rename label{flex-basis:100%;margin:0;font-weight:400}.passkey-item form.rename input{flex:1 1 8rem;width:auto;min-width:0}
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

/** The human sentence of each OAuth error code a provider error page can show. */
export const PROVIDER_ERROR_SENTENCES: Readonly<Record<string, string>> = Object.freeze({
  invalid_client:
    'The application that sent you here is not known to this sign-in service, or it may not sign people in right now.',
  invalid_request: 'The application sent a sign-in request this service cannot accept.',
  invalid_redirect_uri:
    'The application asked to send you back to an address it has not registered, so the sign-in stopped here to keep you safe.',
  access_denied: 'Access was denied, so the sign-in did not continue.',
  login_required: 'You need to sign in first, but the application asked not to show a sign-in page.',
  consent_required: 'The application needs your permission, but asked not to show the consent page.',
  interaction_required: 'The sign-in needs your input, but the application asked not to show any page.',
  invalid_scope: 'The application asked for permissions it is not allowed to request.',
  unauthorized_client: 'The application is not allowed to sign people in this way.',
  unsupported_response_type: 'The application asked for a kind of answer this service does not give.',
  temporarily_unavailable: 'The sign-in service is temporarily unavailable; try again in a moment.',
  server_error: 'The service could not complete the request; try again later.',
  unknown: 'The sign-in could not continue.',
});

/** The sentence of an OAuth error code, or the one of `unknown`. */
export function providerErrorSentence(code: string | undefined): string {
  return (code && PROVIDER_ERROR_SENTENCES[code]) || (PROVIDER_ERROR_SENTENCES.unknown as string);
}

/** Options of {@link createProviderErrorRenderer}. */
export interface ProviderErrorRendererOptions {
  /** Base path of the sign-in assets, prefix included; the process-wide default when absent. */
  readonly assets?: string;
  /** Receives one info line per page with its trace id, so a user's quote finds the cause. */
  readonly logger?: Logger;
}

const REQUEST_ID = /^[A-Za-z0-9._:@/+=-]{1,128}$/;

/** The trace id of a provider request: its `traceparent`'s, else a sane `x-request-id`, else a new one. */
export function providerTraceId(headers: Record<string, string | string[] | undefined>): string {
  const traceparent = typeof headers.traceparent === 'string' ? headers.traceparent : undefined;
  const requestId = headers['x-request-id'];
  return (
    traceIdFromTraceparent(traceparent) ??
    (typeof requestId === 'string' && REQUEST_ID.test(requestId) ? requestId : undefined) ??
    newTraceId()
  );
}

/**
 * Where "Back to the application" may lead: the origin of the first
 * registered redirect URI of a client oidc-provider has already loaded (so
 * it is known and valid), only over http(s). Never the request's own
 * `redirect_uri`, which nothing vouches for on an error page.
 */
function backLink(ctx: KoaContextWithOIDC, code: string): { href: string; name: string } | undefined {
  if (code === 'invalid_client') return undefined;
  const client = ctx.oidc?.client as { redirectUris?: string[]; clientName?: string; clientId?: string } | undefined;
  const first = client?.redirectUris?.[0];
  if (!client || !first) return undefined;
  try {
    const url = new URL(first);
    if (url.protocol !== 'https:' && url.protocol !== 'http:') return undefined;
    return { href: `${url.origin}/`, name: client.clientName ?? client.clientId ?? 'the application' };
  } catch {
    return undefined;
  }
}

/**
 * The `renderError` of oidc-provider: errors shown to the user agent, in the
 * sign-in page layout, with a sentence per OAuth error code, the code itself
 * (for developers), the trace id (also logged) and a way back to the
 * application when the client is known. Never shows the internals of a 5xx.
 *
 * @example
 * const renderError = createProviderErrorRenderer({ assets: '/connect/assets', logger });
 */
export function createProviderErrorRenderer(options: ProviderErrorRendererOptions = {}) {
  return async function renderProviderError(
    ctx: KoaContextWithOIDC,
    out: { error?: string; error_description?: string },
    error: unknown,
  ): Promise<void> {
    const status = (error as { status?: number; statusCode?: number })?.status ?? ctx.status ?? 500;
    const isServerError = status >= 500;
    const code = isServerError ? 'server_error' : (out.error ?? 'invalid_request');
    const traceId = providerTraceId(ctx.req.headers);
    const back = isServerError ? undefined : backLink(ctx, code);
    (options.logger ?? silentLogger).info('sign-in error page', {
      traceId,
      status,
      error: code,
      ...(isServerError ? {} : { description: out.error_description }),
      clientId: (ctx.oidc?.client as { clientId?: string } | undefined)?.clientId,
      path: ctx.path,
    });
    ctx.type = 'html';
    ctx.set('x-trace-id', traceId);
    applyPageSecurityHeaders(ctx);
    const details =
      !isServerError && out.error_description && markup`<p class="hint">Technical details: ${out.error_description}</p>`;
    ctx.body = renderPage(
      { title: 'Sign-in problem', assets: options.assets ?? providerAssets },
      markup`<h1>Sign-in problem</h1>
<p>${providerErrorSentence(code)}</p>
${details}
<dl class="facts">
<dt>Error code</dt><dd><code>${code}</code></dd>
<dt>Trace id</dt><dd><code>${traceId}</code></dd>
</dl>
<p class="hint">If this keeps happening, send the trace id to the people who run this service.</p>
<div class="links">${
        back
          ? markup`<a href="${back.href}">Back to ${back.name}</a>`
          : markup`<span class="hint">Go back to the application and start the sign-in again.</span>`
      }</div>`,
    );
  };
}

/** Renders oidc-provider errors shown to the user agent with the process-wide assets path and no logger. */
export const renderProviderError = createProviderErrorRenderer();

/** The page of a request that failed because the database is unreachable (answered with 503 and `Retry-After`). */
export function renderUnavailablePage(assets: string): string {
  return renderPage(
    { title: 'Temporarily unavailable', assets },
    markup`<h1>Temporarily unavailable</h1><p>The service cannot reach its database right now. Try again in a moment.</p>`,
  );
}
