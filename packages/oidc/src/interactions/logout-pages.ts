import { markup, unsafeRaw } from '@idt/core';
import type { KoaContextWithOIDC } from 'oidc-provider';
import { applyPageSecurityHeaders } from '../policy/security-headers.js';
import { renderPage } from './pages.js';

/** Where the logout pages load their assets, and whose sign-in they end. */
export interface LogoutPagesOptions {
  /** Base path of the sign-in assets (prefix included). */
  readonly assets: string;
  /** The issuer: its host is named on the confirmation page. */
  readonly issuer: string;
}

/** The logout pages oidc-provider hands over to: every case idt renders itself. */
export interface LogoutPages {
  /** `features.rpInitiatedLogout.logoutSource`: the "Sign out?" confirmation of a signed-in browser. */
  logoutSource(ctx: KoaContextWithOIDC, form: string): void;
  /** `features.rpInitiatedLogout.postLogoutSuccessSource`: the page after a logout without a redirect. */
  postLogoutSuccessSource(ctx: KoaContextWithOIDC): void;
  /**
   * Replaces oidc-provider's self-submitting page of a logout request
   * without a session (an inline script, no CSP) with an idt page: the same
   * form, submitted by the external `autosubmit.js`, with a visible button.
   */
  withoutSession(ctx: KoaContextWithOIDC): void;
}

/** The post-logout redirect of this request, when it has one (validated by oidc-provider before any page). */
function postLogoutTarget(ctx: KoaContextWithOIDC): string | undefined {
  const value = ctx.oidc.params?.post_logout_redirect_uri;
  return typeof value === 'string' ? value : undefined;
}

/** The logout pages of one provider. */
export function createLogoutPages(options: LogoutPagesOptions): LogoutPages {
  const { assets } = options;
  const host = new URL(options.issuer).host;
  return {
    logoutSource(ctx, form) {
      // A request that proved who sent it (a valid id_token_hint) signs out without asking.
      const hinted = Boolean((ctx.oidc.entities as { IdTokenHint?: unknown }).IdTokenHint);
      // oidc-provider's own form (its action and hidden xsrf field), with idt's buttons: markup as it comes.
      const opened = unsafeRaw(
        form
          .replace('<form ', `<form${hinted ? ' data-autosubmit' : ''} `)
          .replace(
            '</form>',
            '<button type="submit" name="logout" value="yes" autofocus>Yes, sign me out</button><button type="submit" class="secondary">No, stay signed in</button></form>',
          ),
      );
      applyPageSecurityHeaders(ctx, { formTargets: [options.issuer, postLogoutTarget(ctx)] });
      ctx.type = 'html';
      ctx.body = renderPage(
        { title: 'Sign out', assets, ...(hinted ? { scripts: ['autosubmit.js'] } : {}) },
        markup`<h1>Sign out?</h1>
<p>You will be signed out of every application that uses ${host}.</p>
${opened}`,
      );
    },

    postLogoutSuccessSource(ctx) {
      applyPageSecurityHeaders(ctx);
      ctx.type = 'html';
      ctx.body = renderPage(
        { title: 'Signed out', assets },
        markup`<h1>You are signed out</h1><p role="status">You can close this window.</p>`,
      );
    },

    withoutSession(ctx) {
      const secret = (ctx.oidc.session?.state as { secret?: string } | undefined)?.secret;
      if (!secret) return;
      const target = postLogoutTarget(ctx);
      applyPageSecurityHeaders(ctx, { formTargets: [options.issuer, target] });
      ctx.status = 200;
      ctx.type = 'html';
      ctx.body = renderPage(
        { title: 'Signing out', assets, scripts: ['autosubmit.js'] },
        markup`<h1>You are not signed in</h1>
<p role="status">There is no session to end here${target ? '; continuing back to the application' : ''}.</p>
<form method="post" action="${ctx.oidc.urlFor('end_session_confirm')}" data-autosubmit>
<input type="hidden" name="xsrf" value="${secret}">
<button type="submit" name="logout" value="yes" autofocus>Continue</button>
</form>`,
      );
    },
  };
}
