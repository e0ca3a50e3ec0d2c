import { ProblemError } from '@idt/problem';
import { describe, expect, it } from 'vitest';
import { parseIdpMetadata } from '../src/saml/idp-metadata.js';
import { createTestCertificate } from './support/certificate.js';
import { createTestIdentityProvider } from './support/saml-idp.js';

const signing = createTestCertificate('signing');
const next = createTestCertificate('next signing');
const encryption = createTestCertificate('encryption');

/** Metadata shaped like the documents Okta and Microsoft Entra ID publish: md/ds prefixes, a signature, several keys. */
const realistic = `<?xml version="1.0" encoding="UTF-8"?>
<md:EntityDescriptor xmlns:md="urn:oasis:names:tc:SAML:2.0:metadata" xmlns:ds="http://www.w3.org/2000/09/xmldsig#"
    entityID="http://www.okta.com/exk1a2b3c4d5e6f7g8h9" ID="_a1b2c3" validUntil="2031-01-01T00:00:00Z">
  <ds:Signature><ds:SignedInfo><ds:Reference URI="#_a1b2c3"/></ds:SignedInfo></ds:Signature>
  <md:IDPSSODescriptor WantAuthnRequestsSigned="false" protocolSupportEnumeration="urn:oasis:names:tc:SAML:2.0:protocol">
    <md:KeyDescriptor use="signing">
      <ds:KeyInfo><ds:X509Data>
        <ds:X509Certificate>
${signing.certificateBase64.match(/.{1,64}/g)?.join('\n')}
        </ds:X509Certificate>
      </ds:X509Data></ds:KeyInfo>
    </md:KeyDescriptor>
    <md:KeyDescriptor>
      <ds:KeyInfo><ds:X509Data><ds:X509Certificate>${next.certificateBase64}</ds:X509Certificate></ds:X509Data></ds:KeyInfo>
    </md:KeyDescriptor>
    <md:KeyDescriptor use="encryption">
      <ds:KeyInfo><ds:X509Data><ds:X509Certificate>${encryption.certificateBase64}</ds:X509Certificate></ds:X509Data></ds:KeyInfo>
    </md:KeyDescriptor>
    <md:SingleLogoutService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="https://acme.okta.com/app/acme_idt_1/exk1/slo/saml"/>
    <md:NameIDFormat>urn:oasis:names:tc:SAML:1.1:nameid-format:unspecified</md:NameIDFormat>
    <md:NameIDFormat>urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress</md:NameIDFormat>
    <md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST" Location="https://acme.okta.com/app/acme_idt_1/exk1/sso/saml"/>
    <md:SingleSignOnService Binding="urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect" Location="https://acme.okta.com/app/acme_idt_1/exk1/sso/saml"/>
  </md:IDPSSODescriptor>
</md:EntityDescriptor>`;

function refusal(xml: string): string {
  try {
    parseIdpMetadata(xml);
  } catch (error) {
    expect(error).toBeInstanceOf(ProblemError);
    expect((error as ProblemError).code).toBe('Sso.InvalidMetadata');
    return (error as ProblemError).detail;
  }
  throw new Error('The metadata was accepted');
}

describe('parseIdpMetadata', () => {
  it('reads a realistic IdP metadata document', () => {
    const metadata = parseIdpMetadata(realistic);
    expect(metadata).toEqual({
      entityId: 'http://www.okta.com/exk1a2b3c4d5e6f7g8h9',
      ssoUrl: 'https://acme.okta.com/app/acme_idt_1/exk1/sso/saml',
      ssoPostUrl: 'https://acme.okta.com/app/acme_idt_1/exk1/sso/saml',
      signingCertificates: [signing.certificatePem, next.certificatePem],
      wantAuthnRequestsSigned: false,
      nameIdFormats: [
        'urn:oasis:names:tc:SAML:1.1:nameid-format:unspecified',
        'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress',
      ],
    });
  });

  it('reads what samlify publishes as an IdP, and one IdP inside an EntitiesDescriptor', () => {
    const idp = createTestIdentityProvider();
    expect(parseIdpMetadata(idp.metadata)).toMatchObject({
      entityId: idp.entityId,
      ssoUrl: idp.ssoUrl,
      signingCertificates: [idp.certificate.certificatePem],
    });
    const wrapped = `<EntitiesDescriptor xmlns="urn:oasis:names:tc:SAML:2.0:metadata">${realistic.replace(/^<\?xml[^>]*>/, '')}</EntitiesDescriptor>`;
    expect(parseIdpMetadata(wrapped).entityId).toBe('http://www.okta.com/exk1a2b3c4d5e6f7g8h9');
  });

  it('refuses a DOCTYPE, entity declarations included', () => {
    const laughs = `<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">]>
${realistic.replace(/^<\?xml[^>]*>/, '').replace('exk1a2b3c4d5e6f7g8h9"', 'exk1a2b3c4d5e6f7g8h9&lol2;"')}`;
    expect(refusal(laughs)).toMatch(/DOCTYPE/);
    expect(refusal(`<!DOCTYPE EntityDescriptor SYSTEM "file:///etc/passwd">${realistic.replace(/^<\?xml[^>]*>/, '')}`)).toMatch(
      /DOCTYPE/,
    );
  });

  it('refuses what is not usable metadata', () => {
    expect(refusal('<EntityDescriptor')).toMatch(/well-formed/);
    expect(refusal('<html/>')).toMatch(/not SAML 2.0 metadata/);
    expect(refusal(realistic.replace(/<md:SingleSignOnService Binding="[^"]*HTTP-Redirect"[^>]*>/, ''))).toMatch(/HTTP-Redirect/);
    expect(refusal(realistic.replace(/<md:KeyDescriptor(?: use="signing")?>[\s\S]*?<\/md:KeyDescriptor>/g, ''))).toMatch(
      /no signing certificate/,
    );
    expect(refusal(realistic.replace(signing.certificateBase64.slice(0, 64), 'AAAA'))).toMatch(/not a valid X.509/);
    expect(refusal(realistic.replace(' entityID="http://www.okta.com/exk1a2b3c4d5e6f7g8h9"', ''))).toMatch(/entityID/);
  });
});
