import {
  allElements,
  attribute,
  child,
  children,
  containsComment,
  descendants,
  isElement,
  NS,
  type XmlDocument,
  type XmlElement,
} from '../xml/dom.js';
import { parseXmlSafely, UnsafeXmlError } from '../xml/safe-xml.js';
import { refuse, SamlRefusalError } from './refusal.js';

/** The largest decoded SAML response accepted. */
export const MAX_SAML_RESPONSE_BYTES = 512 * 1024;

const SUCCESS = 'urn:oasis:names:tc:SAML:2.0:status:Success';

/** A SAML response whose shape passed the structural checks; nothing in it is verified yet. */
export interface ResponseStructure {
  /** The decoded XML, for signature verification. */
  readonly xml: string;
  /** The Response element. */
  readonly response: XmlElement;
  /** The one Assertion, a direct child of the Response. */
  readonly assertion: XmlElement;
}

/** Decodes the base64 `SAMLResponse` of an HTTP-POST form. */
export function decodeSamlResponse(value: unknown): string {
  if (typeof value !== 'string' || value.trim() === '') refuse('malformed', 'SAMLResponse is missing');
  const compact = value.replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(compact) || compact.length % 4 !== 0) {
    refuse('malformed', 'SAMLResponse is not base64');
  }
  if ((compact.length / 4) * 3 > MAX_SAML_RESPONSE_BYTES + 3) refuse('malformed', 'SAMLResponse is too large');
  return Buffer.from(compact, 'base64').toString('utf8');
}

function checkStatus(response: XmlElement): void {
  const status = child(response, NS.protocol, 'Status');
  const code = status ? child(status, NS.protocol, 'StatusCode') : undefined;
  const value = attribute(code, 'Value');
  if (!value) refuse('malformed', 'The response has no status code');
  if (value !== SUCCESS) {
    const second = code ? attribute(child(code, NS.protocol, 'StatusCode'), 'Value') : undefined;
    const statusCode = second ? `${value} ${second}` : value;
    throw new SamlRefusalError('idp-error', `The identity provider answered ${statusCode}`, statusCode);
  }
}

/** IDs must be unique, or a signature reference could point at a decoy. */
function checkUniqueIds(document: XmlDocument): void {
  const seen = new Set<string>();
  for (const element of [document.documentElement, ...allElements(document.documentElement)]) {
    for (const name of ['ID', 'Id', 'id', 'AssertionID']) {
      const id = attribute(element, name);
      if (id === undefined) continue;
      if (seen.has(id)) refuse('wrapped', `The ID ${id} appears more than once`);
      seen.add(id);
    }
  }
}

/**
 * Every signature must be an enveloped signature of its parent, and its
 * parent the Response or the Assertion: a signature anywhere else (in
 * Extensions, in another signature's Object) signals a wrapping attempt.
 */
function checkSignaturePlacement(document: XmlDocument, response: XmlElement, assertion: XmlElement): boolean {
  const signatures = descendants(document, NS.dsig, 'Signature');
  for (const signature of signatures) {
    const parent = signature.parentNode;
    if (parent !== response && parent !== assertion) refuse('wrapped', 'A signature sits outside the Response and the Assertion');
    const signedInfo = child(signature, NS.dsig, 'SignedInfo');
    const references = signedInfo ? children(signedInfo, NS.dsig, 'Reference') : [];
    const parentId = attribute(parent as XmlElement, 'ID');
    if (references.length !== 1 || !parentId || attribute(references[0], 'URI') !== `#${parentId}`) {
      refuse('wrapped', 'A signature does not cover exactly its parent element');
    }
  }
  if (children(response, NS.dsig, 'Signature').length > 1 || children(assertion, NS.dsig, 'Signature').length > 1) {
    refuse('wrapped', 'An element carries several signatures');
  }
  return signatures.length > 0;
}

function checkComments(assertion: XmlElement): void {
  const subject = child(assertion, NS.assertion, 'Subject');
  const nameId = subject ? child(subject, NS.assertion, 'NameID') : undefined;
  if (nameId && containsComment(nameId)) refuse('comment-in-name-id', 'The NameID contains an XML comment');
  // Canonicalization drops comments, so a comment splitting any signed value changes what a reader sees.
  if (containsComment(assertion)) refuse('malformed', 'The assertion contains an XML comment');
}

/**
 * Parses a SAML response and checks its shape before any signature is
 * verified: safe XML, a successful status, exactly one assertion and it a
 * direct child of the Response, unique IDs, signatures only where they
 * belong and covering their parent, at least one signature, no comment in
 * the assertion.
 *
 * @throws {@link SamlRefusalError}
 */
export function checkResponseStructure(xml: string): ResponseStructure {
  let document: XmlDocument;
  try {
    document = parseXmlSafely(xml, { maxLength: MAX_SAML_RESPONSE_BYTES });
  } catch (error) {
    if (error instanceof UnsafeXmlError) refuse('malformed', `The response is not safe XML (${error.reason})`);
    throw error;
  }
  const response = document.documentElement;
  if (!isElement(response, NS.protocol, 'Response')) refuse('malformed', 'The document is not a SAML Response');
  checkStatus(response);
  if (descendants(document, NS.assertion, 'EncryptedAssertion').length > 0) {
    refuse('unsupported', 'Encrypted assertions are not supported');
  }
  const assertions = descendants(document, NS.assertion, 'Assertion');
  const direct = children(response, NS.assertion, 'Assertion');
  if (assertions.length === 0) refuse('malformed', 'The response holds no assertion');
  if (assertions.length > 1 || direct.length !== 1 || !direct[0]) {
    refuse('wrapped', 'The response holds several assertions or one out of place');
  }
  const assertion = direct[0];
  checkUniqueIds(document);
  if (!checkSignaturePlacement(document, response, assertion))
    refuse('unsigned', 'Neither the response nor the assertion is signed');
  checkComments(assertion);
  return { xml, response, assertion };
}
