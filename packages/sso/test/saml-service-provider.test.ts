import { createManualClock, type ManualClock } from '@idt/core';
import { beforeEach, describe, expect, it } from 'vitest';
import type { SamlConnection } from '../src/saml/connection.js';
import type { SamlRefusalReason } from '../src/saml/refusal.js';
import { createMemoryReplayCache } from '../src/saml/replay-cache.js';
import { createMemoryRequestCache } from '../src/saml/request-cache.js';
import {
  createSamlServiceProvider,
  type SamlServiceProvider,
  type SamlServiceProviderOptions,
  type SamlValidation,
} from '../src/saml/service-provider.js';
import { createTestCertificate } from './support/certificate.js';
import { createTestIdentityProvider, decode, encode, mutate, type ResponseOptions } from './support/saml-idp.js';
import type { TestDocument, TestElement } from './support/xml-dom.js';

const NS_ASSERTION = 'urn:oasis:names:tc:SAML:2.0:assertion';
const NS_PROTOCOL = 'urn:oasis:names:tc:SAML:2.0:protocol';
const NS_DSIG = 'http://www.w3.org/2000/09/xmldsig#';
const MINUTE = 60_000;

const idp = createTestIdentityProvider();
const connection: SamlConnection = {
  spEntityId: 'https://id.example.com/sso/saml/conn_1/metadata',
  acsUrl: 'https://id.example.com/sso/saml/conn_1/acs',
  idpEntityId: idp.entityId,
  idpSsoUrl: idp.ssoUrl,
  idpCertificates: [idp.certificate.certificatePem],
};

let clock: ManualClock;
let sp: SamlServiceProvider;

function build(overrides: Partial<SamlConnection> = {}, options: Partial<SamlServiceProviderOptions> = {}) {
  return createSamlServiceProvider(
    { ...connection, ...overrides },
    {
      clock,
      replayCache: createMemoryReplayCache({ clock }),
      requestCache: createMemoryRequestCache({ clock }),
      ...options,
    },
  );
}

beforeEach(() => {
  // Years away from the wall clock: a rule node-saml checked on Date.now() would fail every test.
  clock = createManualClock('2031-03-01T09:00:00Z');
  sp = build();
});

/** Starts a sign-in at the SP and has the IdP answer it. */
async function signIn(options: Partial<ResponseOptions> = {}, target = sp) {
  const request = await target.createAuthnRequest({ relayState: '/account?tab=security' });
  const read = await idp.readRequest(request.url, target.metadata());
  const samlResponse = await idp.respond({ spMetadata: target.metadata(), now: clock.now(), inResponseTo: read.id, ...options });
  return { request, samlResponse };
}

function refusalOf(outcome: SamlValidation): SamlRefusalReason | 'accepted' {
  return outcome.ok ? 'accepted' : outcome.refusal.reason;
}

describe('service provider metadata and AuthnRequest', () => {
  it('describes the SP with its entity id, ACS URL and a wish for signed assertions', () => {
    const metadata = sp.metadata();
    expect(metadata).toContain(`entityID="${connection.spEntityId}"`);
    expect(metadata).toContain(`Location="${connection.acsUrl}"`);
    expect(metadata).toContain('WantAssertionsSigned="true"');
  });

  it('sends an AuthnRequest by HTTP-Redirect that the IdP reads, with a same-origin RelayState', async () => {
    const request = await sp.createAuthnRequest({ relayState: '/account?tab=security' });
    expect(request.url.startsWith(`${idp.ssoUrl}?SAMLRequest=`)).toBe(true);
    expect(request.expiresAt.toISOString()).toBe('2031-03-01T09:10:00.000Z');
    const read = await idp.readRequest(request.url, sp.metadata());
    expect(read).toEqual({
      id: request.requestId,
      acsUrl: connection.acsUrl,
      destination: idp.ssoUrl,
      relayState: '/account?tab=security',
    });
  });

  it('drops a RelayState that leads to another origin', async () => {
    const request = await sp.createAuthnRequest({ relayState: 'https://evil.example/' });
    expect(new URL(request.url).searchParams.has('RelayState')).toBe(false);
  });
});

describe('an SP-initiated response', () => {
  it('is accepted with the profile of the signed assertion', async () => {
    const { request, samlResponse } = await signIn({
      attributes: { email: ['ada@example.com'], groups: ['admins', 'engineering'] },
    });
    const outcome = await sp.validatePostResponse({ SAMLResponse: samlResponse }, { relayState: '/account?tab=security' });
    expect(outcome.ok).toBe(true);
    if (!outcome.ok) return;
    expect(outcome.initiatedBy).toBe('sp');
    expect(outcome.requestId).toBe(request.requestId);
    expect(outcome.relayState).toBe('/account?tab=security');
    expect(outcome.profile).toMatchObject({
      issuer: idp.entityId,
      nameId: 'ada@example.com',
      nameIdFormat: 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress',
      attributes: { email: ['ada@example.com'], groups: ['admins', 'engineering'] },
      notOnOrAfter: new Date('2031-03-01T09:05:00Z'),
    });
    expect(outcome.profile.assertionId).toMatch(/^_assertion/);
    expect(outcome.profile.sessionIndex).toBe(`_session-${outcome.profile.assertionId}`);
  });

  it('is accepted when only the response is signed, and when both are', async () => {
    for (const sign of ['response', 'both'] as const) {
      const { samlResponse } = await signIn({ sign });
      const xml = decode(samlResponse);
      expect(xml.match(/<ds:Signature[ >]/g)?.length).toBe(sign === 'both' ? 2 : 1);
      expect(refusalOf(await sp.validatePostResponse({ SAMLResponse: samlResponse }))).toBe('accepted');
    }
  });

  it('accepts a certificate rollover: any of the connection certificates verifies', async () => {
    const rolled = build({ idpCertificates: [createTestCertificate().certificatePem, idp.certificate.certificatePem] });
    const { samlResponse } = await signIn({}, rolled);
    expect(refusalOf(await rolled.validatePostResponse({ SAMLResponse: samlResponse }))).toBe('accepted');
  });
});

describe('a response is refused', () => {
  it('unsigned', async () => {
    const { samlResponse } = await signIn();
    const unsigned = encode(decode(samlResponse).replace(/<ds:Signature[\s\S]*?<\/ds:Signature>/g, ''));
    expect(refusalOf(await sp.validatePostResponse({ SAMLResponse: unsigned }))).toBe('unsigned');
  });

  it('signed by a key that is not the connection certificate', async () => {
    const impostor = createTestIdentityProvider({ entityId: idp.entityId, ssoUrl: idp.ssoUrl });
    const request = await sp.createAuthnRequest();
    const read = await idp.readRequest(request.url, sp.metadata());
    const samlResponse = await impostor.respond({ spMetadata: sp.metadata(), now: clock.now(), inResponseTo: read.id });
    expect(refusalOf(await sp.validatePostResponse({ SAMLResponse: samlResponse }))).toBe('bad-signature');
  });

  it('tampered: one byte of the NameID changed after signing', async () => {
    const { samlResponse } = await signIn({ nameId: 'ada@example.com' });
    const tampered = encode(decode(samlResponse).replace('>ada@example.com<', '>eda@example.com<'));
    expect(decode(tampered)).toContain('>eda@example.com<');
    expect(refusalOf(await sp.validatePostResponse({ SAMLResponse: tampered }))).toBe('bad-signature');
  });

  it('for another audience, destination, recipient or issuer', async () => {
    const cases = [
      [{ Audience: 'https://other.example.com/sso/saml/metadata' }, 'wrong-audience'],
      [{ Destination: 'https://other.example.com/acs' }, 'wrong-destination'],
      [{ SubjectRecipient: 'https://other.example.com/acs' }, 'wrong-recipient'],
      [{ Issuer: 'https://other-idp.example.test/metadata' }, 'wrong-issuer'],
    ] as const;
    for (const [tags, reason] of cases) {
      const { samlResponse } = await signIn({ tags });
      expect(refusalOf(await sp.validatePostResponse({ SAMLResponse: samlResponse }))).toBe(reason);
    }
  });

  it('expired, on the injected clock, beyond the five minutes of skew', async () => {
    const late = await signIn();
    clock.advance(10 * MINUTE); // NotOnOrAfter + 5 minutes: the skew is used up
    expect(refusalOf(await sp.validatePostResponse({ SAMLResponse: late.samlResponse }))).toBe('expired');

    const onTime = await signIn();
    clock.advance(9 * MINUTE); // four minutes past NotOnOrAfter: within the skew
    expect(refusalOf(await sp.validatePostResponse({ SAMLResponse: onTime.samlResponse }))).toBe('accepted');
  });

  it('not yet valid, from an IdP whose clock runs ahead beyond the skew', async () => {
    const ahead = await signIn({ now: new Date(clock.now().getTime() + 6 * MINUTE) });
    expect(refusalOf(await sp.validatePostResponse({ SAMLResponse: ahead.samlResponse }))).toBe('not-yet-valid');
    const slightlyAhead = await signIn({ now: new Date(clock.now().getTime() + 4 * MINUTE) });
    expect(refusalOf(await sp.validatePostResponse({ SAMLResponse: slightlyAhead.samlResponse }))).toBe('accepted');
  });

  it('replayed: the same assertion posted twice', async () => {
    const { samlResponse } = await signIn();
    expect(refusalOf(await sp.validatePostResponse({ SAMLResponse: samlResponse }))).toBe('accepted');
    expect(refusalOf(await sp.validatePostResponse({ SAMLResponse: samlResponse }))).toBe('replayed');
  });

  it('answering a request this SP never made, or one that expired', async () => {
    const unknown = await idp.respond({ spMetadata: sp.metadata(), now: clock.now(), inResponseTo: '_never-asked' });
    expect(refusalOf(await sp.validatePostResponse({ SAMLResponse: unknown }))).toBe('unknown-in-response-to');

    const patient = build({}, { requestTtlMs: MINUTE });
    const request = await patient.createAuthnRequest();
    const read = await idp.readRequest(request.url, patient.metadata());
    clock.advance(2 * MINUTE);
    const late = await idp.respond({ spMetadata: patient.metadata(), now: clock.now(), inResponseTo: read.id });
    expect(refusalOf(await patient.validatePostResponse({ SAMLResponse: late }))).toBe('unknown-in-response-to');
  });

  it('with an IdP error status, keeping the status code', async () => {
    const { samlResponse } = await signIn({ tags: { StatusCode: 'urn:oasis:names:tc:SAML:2.0:status:Requester' } });
    const outcome = await sp.validatePostResponse({ SAMLResponse: samlResponse });
    expect(outcome.ok ? undefined : outcome.refusal).toMatchObject({
      reason: 'idp-error',
      statusCode: 'urn:oasis:names:tc:SAML:2.0:status:Requester',
    });
  });

  it('malformed: missing, not base64, not a Response, or with a DOCTYPE', async () => {
    const { samlResponse } = await signIn();
    const withDoctype = encode(
      `<?xml version="1.0"?><!DOCTYPE r [<!ENTITY a "aaaa">]>${decode(samlResponse).replace('>ada@example.com<', '>&a;<')}`,
    );
    for (const body of [{}, { SAMLResponse: '%%%' }, { SAMLResponse: encode('<html/>') }, { SAMLResponse: withDoctype }]) {
      expect(refusalOf(await sp.validatePostResponse(body))).toBe('malformed');
    }
  });
});

describe('IdP-initiated sign-in', () => {
  it('is refused unless the connection allows it', async () => {
    const samlResponse = await idp.respond({ spMetadata: sp.metadata(), now: clock.now() });
    expect(decode(samlResponse)).not.toContain('InResponseTo');
    expect(refusalOf(await sp.validatePostResponse({ SAMLResponse: samlResponse }))).toBe('idp-initiated-disabled');
  });

  it('is accepted when allowed, landing on a same-origin RelayState or the default', async () => {
    const open = build({ allowIdpInitiated: true, defaultRelayState: '/welcome' });
    const posted = await idp.respond({ spMetadata: open.metadata(), now: clock.now() });
    const outcome = await open.validatePostResponse({ SAMLResponse: posted }, { relayState: '/projects/7' });
    expect(outcome).toMatchObject({ ok: true, initiatedBy: 'idp', relayState: '/projects/7' });

    const elsewhere = await idp.respond({ spMetadata: open.metadata(), now: clock.now() });
    const fallback = await open.validatePostResponse({ SAMLResponse: elsewhere }, { relayState: '//evil.example/x' });
    expect(fallback).toMatchObject({ ok: true, initiatedBy: 'idp', relayState: '/welcome' });

    expect(refusalOf(await open.validatePostResponse({ SAMLResponse: posted }))).toBe('replayed');
  });
});

describe('signature wrapping and comments', () => {
  /** An unsigned assertion naming the attacker's choice of subject, copied from the signed one. */
  function evilAssertion(document: TestDocument, id: string): TestElement {
    const signed = document.getElementsByTagNameNS(NS_ASSERTION, 'Assertion')[0] as TestElement;
    const evil = signed.cloneNode(true) as TestElement;
    evil.setAttribute('ID', id);
    const signature = evil.getElementsByTagNameNS(NS_DSIG, 'Signature')[0];
    if (signature) evil.removeChild(signature);
    const nameId = evil.getElementsByTagNameNS(NS_ASSERTION, 'NameID')[0] as TestElement;
    nameId.textContent = 'admin@example.com';
    return evil;
  }

  it('refuses an extra unsigned assertion beside the signed one', async () => {
    const { samlResponse } = await signIn();
    const wrapped = mutate(samlResponse, (document) => {
      const signed = document.getElementsByTagNameNS(NS_ASSERTION, 'Assertion')[0] as TestElement;
      document.documentElement.insertBefore(evilAssertion(document, '_evil'), signed);
    });
    expect(refusalOf(await sp.validatePostResponse({ SAMLResponse: wrapped }))).toBe('wrapped');
  });

  it('refuses the signed assertion moved inside the unsigned one (XSW3/XSW4)', async () => {
    const { samlResponse } = await signIn();
    const wrapped = mutate(samlResponse, (document) => {
      const signed = document.getElementsByTagNameNS(NS_ASSERTION, 'Assertion')[0] as TestElement;
      const evil = evilAssertion(document, '_evil');
      document.documentElement.replaceChild(evil, signed);
      evil.appendChild(signed);
    });
    expect(refusalOf(await sp.validatePostResponse({ SAMLResponse: wrapped }))).toBe('wrapped');
  });

  it('refuses the signed assertion hidden in Extensions with an unsigned one of the same ID in its place (XSW7/XSW8)', async () => {
    const { samlResponse } = await signIn();
    const wrapped = mutate(samlResponse, (document) => {
      const signed = document.getElementsByTagNameNS(NS_ASSERTION, 'Assertion')[0] as TestElement;
      const evil = evilAssertion(document, signed.getAttribute('ID') as string);
      const extensions = document.createElementNS(NS_PROTOCOL, 'samlp:Extensions');
      document.documentElement.replaceChild(evil, signed);
      extensions.appendChild(signed);
      document.documentElement.insertBefore(extensions, evil);
    });
    expect(refusalOf(await sp.validatePostResponse({ SAMLResponse: wrapped }))).toBe('wrapped');
  });

  it('refuses an unsigned response whose signature covers the original kept in ds:Object (XSW1/XSW2)', async () => {
    const { samlResponse } = await signIn({ sign: 'response' });
    const wrapped = mutate(samlResponse, (document) => {
      const original = document.documentElement;
      const evil = original.cloneNode(true) as TestElement;
      evil.setAttribute('ID', '_evil-response');
      const evilSignature = evil.getElementsByTagNameNS(NS_DSIG, 'Signature')[0] as TestElement;
      const assertion = evil.getElementsByTagNameNS(NS_ASSERTION, 'Assertion')[0] as TestElement;
      (assertion.getElementsByTagNameNS(NS_ASSERTION, 'NameID')[0] as TestElement).textContent = 'admin@example.com';
      const object = document.createElementNS(NS_DSIG, 'ds:Object');
      const originalSignature = original.getElementsByTagNameNS(NS_DSIG, 'Signature')[0] as TestElement;
      original.removeChild(originalSignature);
      object.appendChild(original.cloneNode(true));
      evilSignature.appendChild(object);
      document.replaceChild(evil, original);
    });
    expect(refusalOf(await sp.validatePostResponse({ SAMLResponse: wrapped }))).toBe('wrapped');
  });

  it('refuses a comment inside the NameID, which the signature does not see', async () => {
    const { samlResponse } = await signIn({ nameId: 'ada@example.com.evil.test' });
    const commented = encode(decode(samlResponse).replace('>ada@example.com.evil.test<', '>ada@example.com<!---->.evil.test<'));
    expect(refusalOf(await sp.validatePostResponse({ SAMLResponse: commented }))).toBe('comment-in-name-id');
  });
});
