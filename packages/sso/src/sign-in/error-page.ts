import { html, IDT_ICON_LINK, type LightResponse, markup, unsafeRaw } from '@idt/core';
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
  const body = markup`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title}</title>
${unsafeRaw(IDT_ICON_LINK)}
<style>body{font-family:system-ui,sans-serif;max-width:36rem;margin:4rem auto;padding:0 1rem;line-height:1.5}</style>
</head>
<body>
<main>
<h1>${title}</h1>
<p role="status">${EXPLANATIONS[options.reason]}</p>
<p>Go back to the application and sign in again. If it keeps failing, ask your organization’s administrator.</p>
</main>
</body>
</html>
`;
  return html(body, {
    status: options.status ?? 400,
    headers: {
      'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'none'",
      'referrer-policy': 'no-referrer',
    },
  });
}
