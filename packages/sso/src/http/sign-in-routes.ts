import { auditRequestOf, defineRoute, type LightResponse, type Route } from '@idt/core';
import { z } from 'zod';
import { MAX_SAML_RESPONSE_BYTES } from '../saml/response-structure.js';
import type { CallbackAnswer, createCallbacks } from '../sign-in/callbacks.js';
import { federationContinuePage, federationErrorPage } from '../sign-in/error-page.js';

const TAGS = ['Single sign-on'];
/** The form of an ACS post: a SAMLResponse is about 10 KiB; encoding and RelayState fit in this. */
const ACS_MAX_BODY_BYTES = Math.ceil((MAX_SAML_RESPONSE_BYTES * 4) / 3) + 16 * 1024;

function respond(answer: CallbackAnswer): LightResponse {
  if (answer.kind === 'error') return federationErrorPage({ organizationName: answer.organizationName, reason: answer.reason });
  return federationContinuePage(answer.location, answer.setCookie);
}

/**
 * The ways back from upstream providers: `GET /sso/oidc/callback` and
 * `POST /sso/saml/{connectionId}/acs` (a cross-site form post from the
 * identity provider: no CSRF token, the signature is the protection). Both
 * answer a page that moves on at once (`meta refresh`: a 303 would stay
 * bound to the provider's `form-action`) to the interaction with
 * `?result={handle}`, or (IdP-initiated SAML) to the connection's default
 * RelayState with the `idt_sso_unsolicited` cookie; a callback of no
 * pending sign-in answers a small HTML page with 400. Each passes its
 * request's facts (client address, user agent, `traceparent`'s trace id) to
 * the sign-in's audit record.
 *
 * @example
 * routes.push(...createSignInRoutes(createCallbacks(options)));
 */
export function createSignInRoutes(callbacks: ReturnType<typeof createCallbacks>): Route[] {
  // Every error once the route matched (a body too large, not a form) is the same page, never a problem document.
  const renderError = () => federationErrorPage({ organizationName: null, reason: 'invalid' });
  return [
    defineRoute({
      method: 'GET',
      path: '/sso/oidc/callback',
      operationId: 'completeOidcSsoSignIn',
      summary: 'Where OpenID providers send the browser back (the redirect URI of every oidc connection)',
      description:
        'Takes the sign-in started by the interaction (by its state, once), redeems the code, validates the id token and signs the person in; answers a page that moves on at once (`meta refresh`, not a 303: the provider’s `form-action` would hold a redirect) to the interaction. An unknown, expired or replayed state answers an HTML page with 400.',
      tags: TAGS,
      auth: 'anonymous',
      ratePolicy: 'auth',
      request: { query: z.looseObject({}) },
      renderError,
      // Pages, not problem documents: a browser, not a program, reads these answers.
      openApi: { extensions: { 'x-error-format': 'html' } },
      responses: {
        200: {
          description: 'A page that moves on at once to the interaction, with `?result=` the outcome’s handle',
          contentType: 'text/html',
        },
        400: { description: 'No pending sign-in: an HTML page saying what to try', contentType: 'text/html' },
      },
      handler: async (ctx) => respond(await callbacks.oidc(ctx.url, auditRequestOf(ctx))),
    }),
    defineRoute({
      method: 'POST',
      path: '/sso/saml/{connectionId}/acs',
      operationId: 'consumeSamlAssertion',
      summary: 'The SAML assertion consumer service of a connection (HTTP-POST binding)',
      description:
        'A cross-site form post from the identity provider: the signed assertion is the protection, not a CSRF token. SP-initiated answers a page that moves on at once (`meta refresh`) to the interaction; IdP-initiated (when the connection allows it) to its default RelayState, with the `idt_sso_unsolicited` cookie. A refused response, or one of no pending sign-in, answers an HTML page with 400.',
      tags: TAGS,
      auth: 'anonymous',
      ratePolicy: 'auth',
      request: {
        params: z.object({ connectionId: z.string().min(1).max(100) }),
        body: z.looseObject({ SAMLResponse: z.unknown().optional(), RelayState: z.unknown().optional() }),
        bodyKind: 'form',
        maxBodyBytes: ACS_MAX_BODY_BYTES,
      },
      renderError,
      openApi: { extensions: { 'x-error-format': 'html' } },
      responses: {
        200: {
          description: 'A page that moves on at once to the interaction, or to the default RelayState',
          contentType: 'text/html',
        },
        400: { description: 'A refused response: an HTML page saying what to try', contentType: 'text/html' },
      },
      handler: async (ctx) =>
        respond(await callbacks.saml(ctx.params.connectionId, ctx.body as Record<string, unknown>, auditRequestOf(ctx))),
    }),
  ];
}
