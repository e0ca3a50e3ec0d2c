import { DATABASE_RETRY_AFTER_SECONDS, type LightResponse, markup, type SafeHtml } from '@idt/core';
import { pageResponse } from './interaction.js';
import { renderPage, renderUnavailablePage } from './pages.js';

/**
 * The sign-in pages' refusals and failures: a page each, with the sign-in
 * pages' security headers. `formTargets` are the interaction's once it is
 * known (none before).
 */
export const signInErrorPages = {
  /** 400: no pending interaction for this browser, or another one than the address names. */
  expired: (assets: string, formTargets: readonly string[]): LightResponse =>
    errorPage(
      400,
      'Sign-in expired',
      assets,
      formTargets,
      markup`<h1>This sign-in has expired</h1>
<p>Sign-in requests last one hour and work only in the browser that started them.</p>
<p class="hint">Go back to the application and start the sign-in again.</p>`,
    ),

  /** 400: the query or form holds a NUL character or bytes that are not valid UTF-8. */
  unreadable: (assets: string, formTargets: readonly string[]): LightResponse =>
    errorPage(
      400,
      'Sign-in problem',
      assets,
      formTargets,
      markup`<h1>This request could not be read</h1>
<p>It contains characters that are not allowed.</p>
<p class="hint">Go back to the application and start the sign-in again.</p>`,
    ),

  /** 403: the form's CSRF token is not this interaction's. */
  formExpired: (assets: string, formTargets: readonly string[]): LightResponse =>
    errorPage(
      403,
      'Sign-in problem',
      assets,
      formTargets,
      markup`<h1>This form has expired</h1><p>Reload the page and try again.</p>`,
    ),

  /** 500: something failed. */
  failed: (assets: string, formTargets: readonly string[]): LightResponse =>
    errorPage(500, 'Sign-in problem', assets, formTargets, markup`<h1>Something went wrong</h1><p>Try again in a moment.</p>`),

  /** 503 with `Retry-After`: the database is unreachable. */
  unavailable(assets: string, formTargets: readonly string[]): LightResponse {
    return pageResponse(503, renderUnavailablePage(assets), formTargets, {
      'retry-after': String(DATABASE_RETRY_AFTER_SECONDS),
    });
  },
};

/** One error page of the sign-in pages, with their security headers. */
function errorPage(status: number, title: string, assets: string, formTargets: readonly string[], body: SafeHtml): LightResponse {
  return pageResponse(status, renderPage({ title, assets }, body), formTargets);
}
