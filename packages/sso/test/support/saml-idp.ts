import { createTestCertificate, type TestCertificate } from './certificate.js';
import { samlify } from './samlify.js';
import { parseTestXml, serializeTestXml, type TestDocument } from './xml-dom.js';

// samlify refuses to work until a schema validator is set; the service provider under test does its own checks.
samlify.setSchemaValidator({ validate: async () => 'schema not validated in tests' });

const EMAIL_FORMAT = 'urn:oasis:names:tc:SAML:1.1:nameid-format:emailAddress';

/** The template tags of samlify's login response that a test may override. */
export type ResponseTag =
  | 'ID'
  | 'AssertionID'
  | 'Destination'
  | 'Audience'
  | 'SubjectRecipient'
  | 'Issuer'
  | 'IssueInstant'
  | 'StatusCode'
  | 'ConditionsNotBefore'
  | 'ConditionsNotOnOrAfter'
  | 'SubjectConfirmationDataNotOnOrAfter'
  | 'NameIDFormat'
  | 'NameID'
  | 'InResponseTo';

/** What the test identity provider puts in a response. */
export interface ResponseOptions {
  /** The service provider's metadata XML (where samlify reads the ACS URL, entity id and whether to sign the assertion). */
  readonly spMetadata: string;
  /** The instant the IdP believes it is. */
  readonly now: Date;
  /** The request answered; none for an IdP-initiated response. */
  readonly inResponseTo?: string;
  readonly nameId?: string;
  readonly attributes?: Readonly<Record<string, readonly string[]>>;
  /** Which signatures to make: the assertion's (default), the response's, or both. */
  readonly sign?: 'assertion' | 'response' | 'both';
  /** Tag values replacing the computed ones. */
  readonly tags?: Partial<Record<ResponseTag, string>>;
}

/** A SAML identity provider played by samlify inside the test. */
export interface TestIdentityProvider {
  readonly entityId: string;
  readonly ssoUrl: string;
  readonly certificate: TestCertificate;
  /** The IdP's metadata XML, as samlify writes it. */
  readonly metadata: string;
  /** Reads an AuthnRequest sent by HTTP-Redirect, the way the IdP would. */
  readRequest(url: string, spMetadata: string): Promise<{ id: string; acsUrl: string; destination: string; relayState?: string }>;
  /** A signed login response, base64 as posted to the ACS URL. */
  respond(options: ResponseOptions): Promise<string>;
}

let counter = 0;
const newId = (prefix: string) => `_${prefix}${Date.now().toString(36)}${(counter++).toString(36)}`;

function escapeXml(value: string): string {
  return value.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

function attributeStatement(attributes: Readonly<Record<string, readonly string[]>>): string {
  const entries = Object.entries(attributes);
  if (entries.length === 0) return '';
  const items = entries
    .map(
      ([name, values]) =>
        `<saml:Attribute Name="${escapeXml(name)}" NameFormat="urn:oasis:names:tc:SAML:2.0:attrname-format:basic">${values
          .map((value) => `<saml:AttributeValue xsi:type="xs:string">${escapeXml(value)}</saml:AttributeValue>`)
          .join('')}</saml:Attribute>`,
    )
    .join('');
  return `<saml:AttributeStatement>${items}</saml:AttributeStatement>`;
}

/** Starts a test identity provider with a fresh key pair (or the given one). */
export function createTestIdentityProvider(
  options: { entityId?: string; ssoUrl?: string; certificate?: TestCertificate } = {},
): TestIdentityProvider {
  const entityId = options.entityId ?? 'https://idp.example.test/metadata';
  const ssoUrl = options.ssoUrl ?? 'https://idp.example.test/sso';
  const certificate = options.certificate ?? createTestCertificate();
  const idp = samlify.IdentityProvider({
    entityID: entityId,
    privateKey: certificate.privateKeyPem,
    signingCert: certificate.certificatePem,
    nameIDFormat: [EMAIL_FORMAT],
    singleSignOnService: [
      { Binding: samlify.Constants.namespace.binding.redirect, Location: ssoUrl },
      { Binding: samlify.Constants.namespace.binding.post, Location: ssoUrl },
    ],
    singleLogoutService: [{ Binding: samlify.Constants.namespace.binding.redirect, Location: `${ssoUrl}/logout` }],
  });

  return {
    entityId,
    ssoUrl,
    certificate,
    metadata: idp.getMetadata(),

    async readRequest(url, spMetadata) {
      const parsed = new URL(url);
      const query = Object.fromEntries(parsed.searchParams);
      const sp = samlify.ServiceProvider({ metadata: spMetadata });
      const result = await idp.parseLoginRequest(sp, 'redirect', { query, octetString: parsed.search.slice(1) });
      const request = result.extract.request as { id: string; assertionConsumerServiceUrl: string; destination: string };
      return {
        id: request.id,
        acsUrl: request.assertionConsumerServiceUrl,
        destination: request.destination,
        ...(query.RelayState ? { relayState: query.RelayState } : {}),
      };
    },

    async respond(response) {
      const sign = response.sign ?? 'assertion';
      // samlify signs the assertion when the SP metadata asks for it, and the response when the SP
      // wants signed messages or does not want signed assertions.
      const spMetadata =
        sign === 'response'
          ? response.spMetadata.replace('WantAssertionsSigned="true"', 'WantAssertionsSigned="false"')
          : response.spMetadata;
      const sp = samlify.ServiceProvider({ metadata: spMetadata, wantMessageSigned: sign === 'both' });
      const acs = sp.entityMeta.getAssertionConsumerService(samlify.Constants.wording.binding.post) as string;
      const now = response.now.toISOString();
      const later = new Date(response.now.getTime() + 5 * 60_000).toISOString();
      const tags: Record<string, string | undefined> = {
        ID: newId('response'),
        AssertionID: newId('assertion'),
        Destination: acs,
        Audience: sp.entityMeta.getEntityID(),
        SubjectRecipient: acs,
        Issuer: entityId,
        IssueInstant: now,
        StatusCode: 'urn:oasis:names:tc:SAML:2.0:status:Success',
        ConditionsNotBefore: now,
        ConditionsNotOnOrAfter: later,
        SubjectConfirmationDataNotOnOrAfter: later,
        NameIDFormat: EMAIL_FORMAT,
        NameID: response.nameId ?? 'ada@example.com',
        InResponseTo: response.inResponseTo,
        ...response.tags,
      };
      const authn = `<saml:AuthnStatement AuthnInstant="${now}" SessionIndex="_session-${escapeXml(String(tags.AssertionID))}"><saml:AuthnContext><saml:AuthnContextClassRef>urn:oasis:names:tc:SAML:2.0:ac:classes:PasswordProtectedTransport</saml:AuthnContextClassRef></saml:AuthnContext></saml:AuthnStatement>`;
      const result = await idp.createLoginResponse(
        sp,
        {} as never,
        'post',
        {},
        {
          customTagReplacement: (template) => ({
            id: String(tags.ID),
            context: samlify.SamlLib.replaceTagsByValue(
              template
                .replace('{AuthnStatement}', authn)
                .replace('{AttributeStatement}', attributeStatement(response.attributes ?? {})),
              tags,
            ),
          }),
        },
      );
      return result.context;
    },
  };
}

/** The XML of a base64 SAMLResponse. */
export function decode(samlResponse: string): string {
  return Buffer.from(samlResponse, 'base64').toString('utf8');
}

/** The base64 SAMLResponse of some XML. */
export function encode(xml: string): string {
  return Buffer.from(xml, 'utf8').toString('base64');
}

/** Rewrites a SAMLResponse through its DOM, the way an attacker edits a captured one. */
export function mutate(samlResponse: string, edit: (document: TestDocument) => void): string {
  const document = parseTestXml(decode(samlResponse));
  edit(document);
  return encode(serializeTestXml(document));
}
