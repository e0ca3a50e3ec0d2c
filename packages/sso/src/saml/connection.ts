import { ProblemError } from '@idt/problem';
import '../problems.js';

/**
 * What a SAML service provider needs to know about one connection: its own
 * identity (entity id, assertion consumer service) and the identity
 * provider's (entity id, single sign-on URL, signing certificates), usually
 * read from the IdP's metadata with `parseIdpMetadata`.
 */
export interface SamlConnection {
  /** This service provider's entity id, the `Audience` every assertion must name. */
  readonly spEntityId: string;
  /** The assertion consumer service URL (HTTP-POST): every response's `Destination` and `Recipient`. */
  readonly acsUrl: string;
  /** The identity provider's entity id, the `Issuer` of its assertions. */
  readonly idpEntityId: string;
  /** Where AuthnRequests go (HTTP-Redirect binding). */
  readonly idpSsoUrl: string;
  /** The IdP's signing certificates (PEM or base64 DER); several during a rollover. */
  readonly idpCertificates: readonly string[];
  /** Whether responses that answer no request of ours (IdP-initiated sign-in) are accepted. Off by default. */
  readonly allowIdpInitiated?: boolean;
  /** Where an IdP-initiated sign-in lands when the IdP sends no usable RelayState; same-origin only. */
  readonly defaultRelayState?: string;
  /** The NameID format asked for; by default none, so the IdP uses its configured one. */
  readonly nameIdFormat?: string;
}

function isHttpUrl(value: string, allowHttp: boolean): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'https:' || (allowHttp && url.protocol === 'http:');
  } catch {
    return false;
  }
}

/**
 * Checks a connection before a service provider is built over it: non-empty
 * entity ids, absolute http(s) URLs, at least one certificate.
 *
 * @throws ProblemError `Sso.InvalidConnection`
 */
export function assertSamlConnection(connection: SamlConnection): void {
  const invalid = (detail: string) => new ProblemError('Sso.InvalidConnection', detail);
  if (!connection.spEntityId.trim()) throw invalid('The service provider entity id is empty.');
  if (!connection.idpEntityId.trim()) throw invalid('The identity provider entity id is empty.');
  if (!isHttpUrl(connection.acsUrl, true)) throw invalid('The assertion consumer service URL must be an absolute http(s) URL.');
  if (!isHttpUrl(connection.idpSsoUrl, true)) throw invalid('The identity provider sign-in URL must be an absolute http(s) URL.');
  if (connection.idpCertificates.length === 0) throw invalid('The identity provider has no signing certificate.');
}
