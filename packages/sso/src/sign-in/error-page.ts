import { html, IDT_ICON_LINK, type LightResponse, markup, type SafeHtml, unsafeRaw } from '@idt/core';
import type { FederationFailureReason } from '@idt/oidc';

/** What a person reads about each failure: never a stack or a library's message. */
const EXPLANATIONS: Readonly<Record<FederationFailureReason, string>> = {
  denied: 'The identity provider did not allow the sign-in.',
  unavailable: 'The identity provider did not answer in time.',
  invalid: 'The identity provider’s answer could not be accepted.',
  expired: 'The sign-in took too long, or this answer was already used.',
  disabled: 'Signing in through this identity provider is turned off.',
  suspended: 'Your account or your membership is not active here.',
  'no-email': 'The identity provider did not send an e-mail address.',
};

/**
 * The page a callback answers when it belongs to no pending sign-in, or the
 * response is refused outright (SAML): which organization's provider failed
 * and what to try. Status 400; a CSP that loads nothing; nothing cached.
 *
 * @example
 * return federationErrorPage({ organizationName: 'Acme', reason: 'expired' });
 */
export function federationErrorPage(options: {
  readonly organizationName: string | null;
  readonly reason: FederationFailureReason;
  readonly status?: number;
}): LightResponse {
  const title = options.organizationName
    ? `Signing in through ${options.organizationName}’s identity provider did not work`
    : 'Signing in through your organization’s identity provider did not work';
  return callbackPage(
    title,
    markup`<h1>${title}</h1>
<p role="status">${EXPLANATIONS[options.reason]}</p>
<p>Go back to the application and sign in again. If it keeps failing, ask your organization’s administrator.</p>`,
    { status: options.status ?? 400 },
  );
}

/**
 * The page a callback answers when the sign-in goes on: it sends the
 * browser on to `location` at once (`meta refresh`, with a link). Not a
 * 303: the provider's page whose form led here may hold its redirects to
 * its `form-action` (idt's own pages do), which names this server but not
 * the relying party the sign-in ends at; a refresh is a new navigation,
 * which no form governs.
 *
 * @example
 * return federationContinuePage('/connect/interaction/abc/federated?result=xyz');
 */
export function federationContinuePage(location: string, setCookie?: string): LightResponse {
  const response = callbackPage(
    'Signing you in…',
    markup`<h1>Signing you in…</h1>
<p><a href="${location}">Continue</a></p>`,
    { status: 200, refresh: location },
  );
  if (setCookie) response.headers.append('set-cookie', setCookie);
  return response;
}

/** One page of the callbacks: a CSP that loads nothing, nothing cached, no referrer. */
function callbackPage(title: string, body: SafeHtml, options: { status: number; refresh?: string }): LightResponse {
  const document = markup`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
${options.refresh && markup`<meta http-equiv="refresh" content="0;url=${options.refresh}">`}
<title>${title}</title>
${unsafeRaw(IDT_ICON_LINK)}
<style>body{font-family:system-ui,sans-serif;max-width:36rem;margin:4rem auto;padding:0 1rem;line-height:1.5}</style>
</head>
<body>
<main>
${body}
</main>
</body>
</html>
`;
  return html(document, {
    status: options.status,
    headers: {
      'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'none'",
      'cache-control': 'no-store',
      'referrer-policy': 'no-referrer',
    },
  });
}
