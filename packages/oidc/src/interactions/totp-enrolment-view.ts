import { markup, type SafeHtml } from '@idt/core';
import { errorSummary } from './pages.js';

/** What {@link totpEnrolmentView} shows of a begun enrolment. */
export interface TotpEnrolmentViewEnrolment {
  /** The Base32 secret, for typing into an app by hand. */
  readonly secret: string;
  /** The `otpauth://` URI's QR code, an SVG document. */
  readonly qrSvg: string;
}

/** Options of {@link totpEnrolmentView}. */
export interface TotpEnrolmentViewOptions {
  readonly enrolment: TotpEnrolmentViewEnrolment;
  /** Where the form posts the code. */
  readonly action: string;
  /** Hidden fields of the form (the CSRF token, the enrolment id). */
  readonly hidden?: SafeHtml;
  /** Fields after the code (e.g. "confirm it's you"). */
  readonly extra?: SafeHtml;
  /** Messages of the error summary (shown above the steps). */
  readonly errors?: readonly string[];
  /** The submit button's label; "Turn on two-step verification" by default. */
  readonly submitLabel?: string;
}

/** The secret in groups of four, easier to copy by hand. */
function grouped(secret: string): string {
  return secret.replace(/(.{4})(?=.)/g, '$1 ');
}

/**
 * The authenticator-app set-up: how to add the account (the QR code as an
 * inline `data:` image — no inline script or style, allowed by the pages'
 * `img-src 'self' data:` — and the key for typing by hand), then a form
 * asking the first 6-digit code (`inputmode="numeric"`,
 * `autocomplete="one-time-code"`). Used by the account page's two-step
 * section and by the sign-in's enrolment step.
 *
 * @example
 * const body = markup`<h1>Set up an authenticator app</h1>
 * ${totpEnrolmentView({ enrolment, action: `${base}/confirm`, hidden: markup`<input type="hidden" name="csrf" value="${csrf}">` })}`;
 */
export function totpEnrolmentView(options: TotpEnrolmentViewOptions): SafeHtml {
  const { enrolment } = options;
  const errors = options.errors ?? [];
  const qr = `data:image/svg+xml;base64,${Buffer.from(enrolment.qrSvg, 'utf8').toString('base64')}`;
  return markup`${errorSummary(errors)}
<ol class="steps">
<li>Open an authenticator app on your phone (for example the one of your phone's maker, or your password manager).</li>
<li>Scan this QR code with it:
<img class="qr" src="${qr}" alt="QR code that adds this account to an authenticator app" width="200" height="200"></li>
<li>Or, if you cannot scan, enter this key by hand (time-based, 6 digits):
<code class="secret" id="totp-secret">${grouped(enrolment.secret)}</code></li>
<li>Enter the 6-digit code the app shows.</li>
</ol>
<form method="post" action="${options.action}" novalidate>
${options.hidden}
<label for="totp-code">6-digit code from the app</label>
<input id="totp-code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" pattern="[0-9 ]*" maxlength="7" required${errors.length > 0 && markup` aria-describedby="error-summary"`}>
${options.extra}
<button type="submit">${options.submitLabel ?? 'Turn on two-step verification'}</button>
</form>`;
}
