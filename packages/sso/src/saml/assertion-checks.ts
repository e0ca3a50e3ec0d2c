import { attribute, child, children, NS, textOf, type XmlElement } from '../xml/dom.js';
import type { SamlConnection } from './connection.js';
import { refuse } from './refusal.js';

const XSI = 'http://www.w3.org/2001/XMLSchema-instance';
const BEARER = 'urn:oasis:names:tc:SAML:2.0:cm:bearer';
const INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

/** What a verified assertion says, once its conditions hold. */
export interface AssertionFacts {
  readonly assertionId: string;
  readonly issuer: string;
  readonly nameId: string;
  readonly nameIdFormat?: string;
  readonly sessionIndex?: string;
  readonly attributes: Readonly<Record<string, readonly string[]>>;
  /** When the assertion stops being valid (Conditions, else the bearer confirmation). */
  readonly notOnOrAfter: Date;
  /** Until when the assertion id must be remembered against replay. */
  readonly keepUntil: Date;
  /** The request the bearer confirmation answers, when it names one. */
  readonly inResponseTo?: string;
}

/** What an assertion is checked against. */
export interface AssertionExpectations {
  readonly connection: SamlConnection;
  readonly now: Date;
  readonly clockSkewMs: number;
}

function instant(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  const time = INSTANT.test(value) ? Date.parse(value) : Number.NaN;
  if (Number.isNaN(time)) refuse('malformed', `${name} is not an instant`);
  return time;
}

function checkWindow(element: XmlElement, name: string, expectations: AssertionExpectations): number | undefined {
  const now = expectations.now.getTime();
  const notBefore = instant(attribute(element, 'NotBefore'), `${name} NotBefore`);
  const notOnOrAfter = instant(attribute(element, 'NotOnOrAfter'), `${name} NotOnOrAfter`);
  if (notBefore !== undefined && now + expectations.clockSkewMs < notBefore) {
    refuse('not-yet-valid', `${name} is not valid before ${new Date(notBefore).toISOString()}`);
  }
  if (notOnOrAfter !== undefined && now - expectations.clockSkewMs >= notOnOrAfter) {
    refuse('expired', `${name} expired at ${new Date(notOnOrAfter).toISOString()}`);
  }
  return notOnOrAfter;
}

function checkAudience(conditions: XmlElement, spEntityId: string): void {
  const restrictions = children(conditions, NS.assertion, 'AudienceRestriction');
  if (restrictions.length === 0) refuse('wrong-audience', 'The assertion names no audience');
  for (const restriction of restrictions) {
    const audiences = children(restriction, NS.assertion, 'Audience').map((audience) => textOf(audience));
    if (!audiences.includes(spEntityId))
      refuse('wrong-audience', `The assertion is meant for ${audiences.join(', ') || 'nobody'}`);
  }
}

/** The bearer confirmation addressed to this ACS URL whose window holds. */
function checkBearer(subject: XmlElement, expectations: AssertionExpectations): { notOnOrAfter: number; inResponseTo?: string } {
  const data = children(subject, NS.assertion, 'SubjectConfirmation')
    .filter((confirmation) => attribute(confirmation, 'Method') === BEARER)
    .map((confirmation) => child(confirmation, NS.assertion, 'SubjectConfirmationData'))
    .filter((element): element is XmlElement => element !== undefined);
  const addressed = data.filter((element) => attribute(element, 'Recipient') === expectations.connection.acsUrl);
  if (addressed.length === 0) refuse('wrong-recipient', 'No bearer confirmation names this assertion consumer service');
  let failure: unknown;
  for (const element of addressed) {
    try {
      const notOnOrAfter = checkWindow(element, 'The bearer confirmation', expectations);
      if (notOnOrAfter === undefined) refuse('malformed', 'The bearer confirmation has no NotOnOrAfter');
      const inResponseTo = attribute(element, 'InResponseTo');
      return { notOnOrAfter, ...(inResponseTo ? { inResponseTo } : {}) };
    } catch (error) {
      failure ??= error;
    }
  }
  throw failure;
}

function readAttributes(assertion: XmlElement): Record<string, string[]> {
  const attributes = new Map<string, string[]>();
  for (const statement of children(assertion, NS.assertion, 'AttributeStatement')) {
    for (const element of children(statement, NS.assertion, 'Attribute')) {
      const name = attribute(element, 'Name');
      if (!name) continue;
      const values = children(element, NS.assertion, 'AttributeValue')
        .filter((value) => value.getAttributeNS(XSI, 'nil') !== 'true')
        .map((value) => textOf(value));
      attributes.set(name, [...(attributes.get(name) ?? []), ...values]);
    }
  }
  return Object.fromEntries(attributes);
}

/**
 * Checks the conditions of an assertion whose signature verified: issuer,
 * audience, a bearer confirmation addressed to the ACS URL, and the
 * NotBefore/NotOnOrAfter windows against the injected clock with the
 * accepted skew. Answers what the assertion says.
 *
 * @throws {@link SamlRefusalError}
 */
export function checkAssertion(assertion: XmlElement, expectations: AssertionExpectations): AssertionFacts {
  const { connection } = expectations;
  const assertionId = attribute(assertion, 'ID');
  if (!assertionId) refuse('malformed', 'The assertion has no ID');
  const issuer = textOf(child(assertion, NS.assertion, 'Issuer'));
  if (issuer !== connection.idpEntityId) refuse('wrong-issuer', `The assertion is issued by ${issuer || 'nobody'}`);

  const conditions = child(assertion, NS.assertion, 'Conditions');
  if (!conditions || children(assertion, NS.assertion, 'Conditions').length > 1) {
    refuse('malformed', 'The assertion needs exactly one Conditions element');
  }
  checkAudience(conditions, connection.spEntityId);

  const subject = child(assertion, NS.assertion, 'Subject');
  if (!subject) refuse('malformed', 'The assertion has no subject');
  const bearer = checkBearer(subject, expectations);
  const conditionsEnd = checkWindow(conditions, 'The assertion', expectations);
  const issued = instant(attribute(assertion, 'IssueInstant'), 'IssueInstant');
  if (issued === undefined) refuse('malformed', 'The assertion has no IssueInstant');
  if (issued > expectations.now.getTime() + expectations.clockSkewMs)
    refuse('not-yet-valid', 'The assertion is issued in the future');

  const nameIdElement = child(subject, NS.assertion, 'NameID');
  const nameId = textOf(nameIdElement);
  if (!nameIdElement || nameId === '') refuse('malformed', 'The assertion has no NameID');
  const nameIdFormat = attribute(nameIdElement, 'Format');
  const sessionIndex = attribute(child(assertion, NS.assertion, 'AuthnStatement'), 'SessionIndex');

  return {
    assertionId,
    issuer,
    nameId,
    ...(nameIdFormat ? { nameIdFormat } : {}),
    ...(sessionIndex ? { sessionIndex } : {}),
    attributes: readAttributes(assertion),
    notOnOrAfter: new Date(conditionsEnd ?? bearer.notOnOrAfter),
    keepUntil: new Date(Math.max(conditionsEnd ?? 0, bearer.notOnOrAfter) + expectations.clockSkewMs),
    ...(bearer.inResponseTo ? { inResponseTo: bearer.inResponseTo } : {}),
  };
}
