import { randomBytes } from 'node:crypto';
import type { Clock } from '@idt/core';
import { SAML, type SamlConfig, ValidateInResponseTo } from '@node-saml/node-saml';
import type { XmlElement } from '../xml/dom.js';
import { parseXmlSafely } from '../xml/safe-xml.js';
import { type AssertionFacts, checkAssertion } from './assertion-checks.js';
import { assertSamlConnection, type SamlConnection } from './connection.js';
import { refuse, type SamlRefusal, SamlRefusalError } from './refusal.js';
import { safeRelayState } from './relay-state.js';
import type { ReplayCache } from './replay-cache.js';
import type { RequestCache } from './request-cache.js';
import { checkResponseStructure, decodeSamlResponse } from './response-structure.js';

/** The clock skew accepted on NotBefore/NotOnOrAfter: five minutes. */
export const DEFAULT_SAML_CLOCK_SKEW_MS = 5 * 60_000;
/** How long an AuthnRequest waits for its answer: ten minutes. */
export const DEFAULT_SAML_REQUEST_TTL_MS = 10 * 60_000;

/** What a service provider is built with. */
export interface SamlServiceProviderOptions {
  /** The clock every time rule reads; node-saml's own wall-clock checks are turned off. */
  readonly clock: Clock;
  /** Where accepted assertion ids are kept until they expire. */
  readonly replayCache: ReplayCache;
  /** Where the AuthnRequests this service provider sent wait for their answer. */
  readonly requestCache: RequestCache;
  /** Accepted clock skew; defaults to {@link DEFAULT_SAML_CLOCK_SKEW_MS}. */
  readonly clockSkewMs?: number;
  /** How long a request may be answered; defaults to {@link DEFAULT_SAML_REQUEST_TTL_MS}. */
  readonly requestTtlMs?: number;
}

/** An AuthnRequest ready to send: redirect the browser to `url`. */
export interface SamlAuthnRequest {
  /** The IdP's single sign-on URL with `SAMLRequest` (and `RelayState`) in its query (HTTP-Redirect binding). */
  readonly url: string;
  /** The request's ID, which the answer's `InResponseTo` must carry. */
  readonly requestId: string;
  /** When an answer stops being accepted. */
  readonly expiresAt: Date;
}

/** Who a verified assertion names, and what it says about them. */
export interface SamlProfile {
  /** The IdP entity id that issued the assertion. */
  readonly issuer: string;
  /** The subject's NameID: with the connection, the key of the identity (never the e-mail alone). */
  readonly nameId: string;
  /** The NameID format, such as `urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress`. */
  readonly nameIdFormat?: string;
  /** The IdP session (`AuthnStatement/@SessionIndex`), for single logout. */
  readonly sessionIndex?: string;
  /** Attribute values by attribute `Name`, every value as text. */
  readonly attributes: Readonly<Record<string, readonly string[]>>;
  /** The assertion's ID. */
  readonly assertionId: string;
  /** When the assertion stops being valid. */
  readonly notOnOrAfter: Date;
}

/** An accepted response. */
export interface SamlAcceptance {
  readonly ok: true;
  readonly profile: SamlProfile;
  /** `sp` when the response answers a request of ours, `idp` for an (allowed) unsolicited one. */
  readonly initiatedBy: 'sp' | 'idp';
  /** The request answered, for `sp`. */
  readonly requestId?: string;
  /**
   * Where to go next, a same-origin path: the one stored with the request
   * (SP-initiated), else the posted RelayState when same-origin, else the
   * connection's default.
   */
  readonly relayState?: string;
}

/** A refused response. */
export interface SamlRejection {
  readonly ok: false;
  readonly refusal: SamlRefusal;
}

/** The outcome of {@link SamlServiceProvider.validatePostResponse}. */
export type SamlValidation = SamlAcceptance | SamlRejection;

/** A SAML 2.0 service provider for one connection. */
export interface SamlServiceProvider {
  /** This service provider's metadata XML, to give to the IdP's administrator. */
  metadata(): string;
  /**
   * Builds an AuthnRequest (HTTP-Redirect binding) and remembers its id in
   * the request cache until it expires. An unsafe `relayState` is dropped.
   */
  createAuthnRequest(options?: { relayState?: string }): Promise<SamlAuthnRequest>;
  /**
   * Validates a response posted to the ACS URL (HTTP-POST binding). Never
   * throws for a bad response: it answers a refusal with a stable reason.
   *
   * @param body - the posted form, at least `SAMLResponse`
   * @param options - the posted `RelayState`
   */
  validatePostResponse(
    body: { readonly SAMLResponse?: unknown },
    options?: { relayState?: string | null },
  ): Promise<SamlValidation>;
}

/** A SAML ID: an NCName, so it starts with an underscore. */
function newRequestId(): string {
  return `_${randomBytes(20).toString('hex')}`;
}

/** node-saml's messages for the failures its signature code detects. */
function refusalOfLibraryError(error: unknown): SamlRefusal {
  const message = error instanceof Error ? error.message : String(error);
  if (/multiple assertions|more than one element|Referenced node|Too many signatures|too many transforms/i.test(message)) {
    return { reason: 'wrapped', detail: message };
  }
  if (/signature/i.test(message)) return { reason: 'bad-signature', detail: message };
  return { reason: 'malformed', detail: message };
}

/**
 * Builds a SAML 2.0 service provider for one connection over
 * `@node-saml/node-saml`. node-saml verifies signatures (with the
 * connection's certificates only, never one carried in the message) and
 * picks the signed assertion; every other rule is checked here on that
 * signed assertion, with the injected clock: the document's shape
 * (wrapping, comments, unsigned), Destination, issuer, audience,
 * Recipient, NotBefore/NotOnOrAfter with skew, InResponseTo against the
 * request cache, IdP-initiated policy and replay.
 *
 * @throws ProblemError `Sso.InvalidConnection` when the connection is incomplete
 *
 * @example
 * const sp = createSamlServiceProvider(connection, {
 *   clock,
 *   replayCache: createMemoryReplayCache({ clock }),
 *   requestCache: createMemoryRequestCache({ clock }),
 * });
 * const { url } = await sp.createAuthnRequest({ relayState: '/account' });
 * // ... later, on POST to the ACS URL:
 * const outcome = await sp.validatePostResponse({ SAMLResponse }, { relayState });
 * if (!outcome.ok) audit(outcome.refusal.reason);
 */
export function createSamlServiceProvider(connection: SamlConnection, options: SamlServiceProviderOptions): SamlServiceProvider {
  assertSamlConnection(connection);
  const { clock, replayCache, requestCache } = options;
  const clockSkewMs = options.clockSkewMs ?? DEFAULT_SAML_CLOCK_SKEW_MS;
  const requestTtlMs = options.requestTtlMs ?? DEFAULT_SAML_REQUEST_TTL_MS;
  const origin = new URL(connection.acsUrl).origin;
  // Keys are scoped so connections sharing one cache cannot answer or burn each other's ids.
  const scoped = (id: string) => `${connection.spEntityId}\n${connection.idpEntityId}\n${id}`;

  const config = (generateUniqueId: () => string, wantAssertionsSigned = true): SamlConfig => ({
    issuer: connection.spEntityId,
    callbackUrl: connection.acsUrl,
    entryPoint: connection.idpSsoUrl,
    idpCert: [...connection.idpCertificates],
    identifierFormat: connection.nameIdFormat ?? null,
    // The metadata asks for signed assertions; validation accepts a signed assertion or a signed
    // response, and node-saml then requires the assertion signed unless the whole response is.
    wantAssertionsSigned,
    wantAuthnResponseSigned: false,
    // The rules node-saml would check on the wall clock or with its own messages are checked here.
    acceptedClockSkewMs: -1,
    audience: false,
    validateInResponseTo: ValidateInResponseTo.never,
    disableRequestedAuthnContext: true,
    generateUniqueId,
  });
  const library = new SAML(config(newRequestId, false));

  async function verifiedAssertion(xml: string): Promise<XmlElement> {
    let assertionXml: string;
    try {
      const { profile } = await library.validatePostResponseAsync({
        SAMLResponse: Buffer.from(xml, 'utf8').toString('base64'),
      });
      const signed = profile?.getAssertionXml?.();
      if (!signed) refuse('malformed', 'No signed assertion');
      assertionXml = signed;
    } catch (error) {
      if (error instanceof SamlRefusalError) throw error;
      const refusal = refusalOfLibraryError(error);
      throw new SamlRefusalError(refusal.reason, refusal.detail);
    }
    return parseXmlSafely(assertionXml).documentElement;
  }

  async function validate(
    body: { readonly SAMLResponse?: unknown },
    postedRelayState: string | null | undefined,
  ): Promise<SamlAcceptance> {
    const structure = checkResponseStructure(decodeSamlResponse(body.SAMLResponse));
    const assertion = await verifiedAssertion(structure.xml);
    if (structure.response.getAttribute('Destination') !== connection.acsUrl) {
      refuse('wrong-destination', 'The response is not addressed to this assertion consumer service');
    }
    const facts: AssertionFacts = checkAssertion(assertion, { connection, now: clock.now(), clockSkewMs });
    const responseInResponseTo = structure.response.getAttribute('InResponseTo') || undefined;
    if (responseInResponseTo && facts.inResponseTo && responseInResponseTo !== facts.inResponseTo) {
      refuse('unknown-in-response-to', 'The response and its assertion answer different requests');
    }
    const inResponseTo = facts.inResponseTo ?? responseInResponseTo;
    if (!inResponseTo && !connection.allowIdpInitiated) {
      refuse('idp-initiated-disabled', 'An unsolicited response, and this connection does not allow IdP-initiated sign-in');
    }
    // Remembered before the request is consumed: a replay is reported as one even after its request was answered.
    if (!(await replayCache.remember(scoped(facts.assertionId), facts.keepUntil))) {
      refuse('replayed', `The assertion ${facts.assertionId} was already used`);
    }
    const profile: SamlProfile = {
      issuer: facts.issuer,
      nameId: facts.nameId,
      ...(facts.nameIdFormat ? { nameIdFormat: facts.nameIdFormat } : {}),
      ...(facts.sessionIndex ? { sessionIndex: facts.sessionIndex } : {}),
      attributes: facts.attributes,
      assertionId: facts.assertionId,
      notOnOrAfter: facts.notOnOrAfter,
    };
    if (inResponseTo) {
      const request = await requestCache.take(scoped(inResponseTo));
      if (!request) refuse('unknown-in-response-to', 'The response answers no pending request of this service provider');
      const relayState = request.relayState ?? safeRelayState(connection.defaultRelayState, origin);
      return { ok: true, profile, initiatedBy: 'sp', requestId: inResponseTo, ...(relayState ? { relayState } : {}) };
    }
    const relayState = safeRelayState(postedRelayState, origin) ?? safeRelayState(connection.defaultRelayState, origin);
    return { ok: true, profile, initiatedBy: 'idp', ...(relayState ? { relayState } : {}) };
  }

  return {
    metadata: () => new SAML(config(newRequestId)).generateServiceProviderMetadata(null),

    async createAuthnRequest(requestOptions = {}) {
      const requestId = newRequestId();
      const relayState = safeRelayState(requestOptions.relayState, origin);
      // One node-saml instance per request: it takes the request id only from its generateUniqueId option.
      const url = await new SAML(config(() => requestId)).getAuthorizeUrlAsync(relayState ?? '', undefined, {});
      const expiresAt = new Date(clock.now().getTime() + requestTtlMs);
      await requestCache.save(scoped(requestId), { expiresAt, ...(relayState ? { relayState } : {}) });
      return { url, requestId, expiresAt };
    },

    async validatePostResponse(body, validateOptions = {}) {
      try {
        return await validate(body, validateOptions.relayState);
      } catch (error) {
        if (error instanceof SamlRefusalError) {
          return {
            ok: false,
            refusal: {
              reason: error.reason,
              detail: error.message,
              ...(error.statusCode ? { statusCode: error.statusCode } : {}),
            },
          };
        }
        return { ok: false, refusal: refusalOfLibraryError(error) };
      }
    },
  };
}
