import { type HeaderReader, html, IDT_ICON_LINK, joinMarkup, type LightResponse, markup, unsafeRaw } from '@idt/core';

function qualityOf(accept: string, matches: (type: string) => boolean): number {
  let best = 0;
  for (const part of accept.split(',')) {
    const [rawType = '', ...params] = part.split(';').map((piece) => piece.trim().toLowerCase());
    if (!matches(rawType)) continue;
    const q = params.find((param) => param.startsWith('q='));
    const quality = q ? Number(q.slice(2)) : 1;
    if (Number.isFinite(quality)) best = Math.max(best, quality);
  }
  return best;
}

/**
 * Whether the request's `Accept` header prefers HTML over JSON: `text/html`
 * (or `text/*`) is named explicitly with a quality at least that of JSON.
 * A bare `*` wildcard (what `fetch` and curl send) keeps JSON.
 */
export function prefersHtml(request: { readonly headers: HeaderReader }): boolean {
  const accept = request.headers.get('accept');
  if (!accept) return false;
  const htmlQuality = qualityOf(accept, (type) => type === 'text/html' || type === 'text/*');
  if (htmlQuality <= 0) return false;
  const jsonQuality = qualityOf(accept, (type) => type === 'application/json' || type === 'application/*' || type === '*/*');
  return htmlQuality >= jsonQuality;
}

/** A form a {@link resultPage} offers: one button posting hidden fields. */
export interface PageForm {
  /** Where the form posts (relative to the page, or a path on this site). */
  readonly action: string;
  readonly fields: Readonly<Record<string, string>>;
  readonly button: string;
}

/**
 * A minimal, accessible result page (one heading, one message, optionally
 * one form with a single button; no script), served with a CSP that loads
 * nothing and lets forms post to this site only.
 */
export function resultPage(options: { status: number; title: string; message: string; form?: PageForm }): LightResponse {
  const { form } = options;
  const formHtml =
    form &&
    markup`<form method="post" action="${form.action}">
${joinMarkup(
  Object.entries(form.fields).map(([name, value]) => markup`<input type="hidden" name="${name}" value="${value}">`),
  '\n',
)}
<button type="submit">${form.button}</button>
</form>
`;
  const body = markup`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${options.title}</title>
${unsafeRaw(IDT_ICON_LINK)}
<style>body{font-family:system-ui,sans-serif;max-width:36rem;margin:4rem auto;padding:0 1rem;line-height:1.5}button{font:inherit;padding:.5rem 1.25rem}</style>
</head>
<body>
<main>
<h1>${options.title}</h1>
<p role="status">${options.message}</p>
${formHtml}</main>
</body>
</html>
`;
  return html(body, {
    status: options.status,
    headers: {
      'content-security-policy':
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'; frame-ancestors 'none'",
      'referrer-policy': 'no-referrer',
    },
  });
}
