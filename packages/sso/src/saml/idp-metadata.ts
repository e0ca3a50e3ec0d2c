import { X509Certificate } from 'node:crypto';
import { ProblemError } from '@idt/problem';
import '../problems.js';
import { attribute, children, isElement, NS, textOf, type XmlDocument, type XmlElement } from '../xml/dom.js';
import { parseXmlSafely, UnsafeXmlError } from '../xml/safe-xml.js';

/** The SAML 2.0 bindings an identity provider's single sign-on service may offer. */
export const SAML_BINDINGS = {
  redirect: 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-Redirect',
  post: 'urn:oasis:names:tc:SAML:2.0:bindings:HTTP-POST',
} as const;

/** What idt takes from an identity provider's metadata. */
export interface IdpMetadata {
  /** The IdP's entity id (`entityID`), the issuer of its assertions. */
  readonly entityId: string;
  /** The single sign-on URL for the HTTP-Redirect binding, the one idt uses. */
  readonly ssoUrl: string;
  /** The HTTP-POST single sign-on URL, when offered. */
  readonly ssoPostUrl?: string;
  /** The signing certificates (`use="signing"` or no `use`), as PEM, in document order. */
  readonly signingCertificates: readonly string[];
  /** Whether the IdP asks for signed AuthnRequests (`WantAuthnRequestsSigned`). */
  readonly wantAuthnRequestsSigned: boolean;
  /** The NameID formats the IdP lists. */
  readonly nameIdFormats: readonly string[];
}

function invalid(detail: string): ProblemError {
  return new ProblemError('Sso.InvalidMetadata', detail);
}

function toPem(base64: string): string {
  const body = base64.replace(/\s+/g, '');
  let certificate: X509Certificate;
  try {
    certificate = new X509Certificate(Buffer.from(body, 'base64'));
  } catch {
    throw invalid('A signing certificate in the metadata is not a valid X.509 certificate.');
  }
  return certificate.toString();
}

function findIdpEntity(root: XmlElement): XmlElement {
  if (isElement(root, NS.metadata, 'EntityDescriptor')) return root;
  if (isElement(root, NS.metadata, 'EntitiesDescriptor')) {
    const idps = children(root, NS.metadata, 'EntityDescriptor').filter(
      (entity) => children(entity, NS.metadata, 'IDPSSODescriptor').length > 0,
    );
    if (idps.length === 1 && idps[0]) return idps[0];
    throw invalid(
      idps.length === 0
        ? 'The metadata describes no identity provider.'
        : 'The metadata describes several identity providers; paste the metadata of one.',
    );
  }
  throw invalid('The document is not SAML 2.0 metadata (no EntityDescriptor).');
}

function httpUrl(value: string | undefined): string | undefined {
  if (!value) return undefined;
  try {
    const url = new URL(value);
    return url.protocol === 'https:' || url.protocol === 'http:' ? url.toString() : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Reads an identity provider's SAML 2.0 metadata (an `EntityDescriptor`,
 * or an `EntitiesDescriptor` holding exactly one IdP) with a parser that
 * refuses DOCTYPE and entity declarations.
 *
 * @throws ProblemError `Sso.InvalidMetadata` when the XML is unsafe or
 *   malformed, or lacks an entity id, an HTTP-Redirect single sign-on
 *   service or a valid signing certificate
 *
 * @example
 * const idp = parseIdpMetadata(await (await fetch(metadataUrl)).text());
 * const connection = { spEntityId, acsUrl, idpEntityId: idp.entityId, idpSsoUrl: idp.ssoUrl, idpCertificates: idp.signingCertificates };
 */
export function parseIdpMetadata(xml: string): IdpMetadata {
  let document: XmlDocument;
  try {
    document = parseXmlSafely(xml);
  } catch (error) {
    if (error instanceof UnsafeXmlError) {
      throw invalid(
        error.reason === 'doctype'
          ? 'Metadata with a DOCTYPE or entity declarations is refused.'
          : error.reason === 'too-large'
            ? 'The metadata document is too large.'
            : 'The metadata is not well-formed XML.',
      );
    }
    throw error;
  }
  const entity = findIdpEntity(document.documentElement);
  const entityId = attribute(entity, 'entityID')?.trim();
  if (!entityId) throw invalid('The metadata has no entityID.');
  const descriptor = children(entity, NS.metadata, 'IDPSSODescriptor')[0];
  if (!descriptor) throw invalid('The metadata describes no identity provider (no IDPSSODescriptor).');
  const protocols = (attribute(descriptor, 'protocolSupportEnumeration') ?? '').split(/\s+/);
  if (!protocols.includes(NS.protocol)) throw invalid('The identity provider does not declare SAML 2.0 support.');

  const services = children(descriptor, NS.metadata, 'SingleSignOnService');
  const serviceUrl = (binding: string) =>
    httpUrl(
      services
        .find((service) => attribute(service, 'Binding') === binding)
        ?.getAttribute('Location')
        ?.trim(),
    );
  const ssoUrl = serviceUrl(SAML_BINDINGS.redirect);
  if (!ssoUrl) throw invalid('The identity provider offers no HTTP-Redirect single sign-on service.');
  const ssoPostUrl = serviceUrl(SAML_BINDINGS.post);

  const signingCertificates: string[] = [];
  for (const key of children(descriptor, NS.metadata, 'KeyDescriptor')) {
    const use = attribute(key, 'use');
    if (use !== undefined && use !== 'signing') continue;
    for (const info of children(key, NS.dsig, 'KeyInfo')) {
      for (const data of children(info, NS.dsig, 'X509Data')) {
        for (const certificate of children(data, NS.dsig, 'X509Certificate')) {
          const pem = toPem(textOf(certificate));
          if (!signingCertificates.includes(pem)) signingCertificates.push(pem);
        }
      }
    }
  }
  if (signingCertificates.length === 0) throw invalid('The metadata holds no signing certificate.');

  return {
    entityId,
    ssoUrl,
    ...(ssoPostUrl ? { ssoPostUrl } : {}),
    signingCertificates,
    wantAuthnRequestsSigned: attribute(descriptor, 'WantAuthnRequestsSigned') === 'true',
    nameIdFormats: children(descriptor, NS.metadata, 'NameIDFormat')
      .map((format) => textOf(format))
      .filter(Boolean),
  };
}
