/**
 * Why a SAML response was refused. Stable: the sign-in pipeline maps them
 * to a page and the audit trail records them.
 *
 * - `malformed`: not base64, not safe well-formed XML (a DOCTYPE included), not a SAML Response, or missing a required element;
 * - `unsupported`: a valid but unsupported form, such as an encrypted assertion;
 * - `idp-error`: the IdP answered with a status other than Success (the user cancelled, was denied, ...);
 * - `unsigned`: neither the assertion nor the response carries a signature;
 * - `bad-signature`: a signature does not verify with the connection's certificates (a tampered document);
 * - `wrapped`: signature wrapping: several assertions, an assertion out of place, duplicate IDs, a signature that does not cover its parent;
 * - `comment-in-name-id`: an XML comment inside the NameID (comments are dropped by canonicalization, so the signature would still hold);
 * - `wrong-issuer`: the assertion is not issued by the connection's IdP;
 * - `wrong-audience`: the assertion is not meant for this service provider;
 * - `wrong-destination`: the response's Destination is not this connection's ACS URL;
 * - `wrong-recipient`: no bearer confirmation names this connection's ACS URL;
 * - `expired` / `not-yet-valid`: outside NotBefore/NotOnOrAfter, beyond the accepted clock skew;
 * - `unknown-in-response-to`: an answer to a request this service provider did not make, already answered, or expired;
 * - `idp-initiated-disabled`: an unsolicited response while the connection does not allow IdP-initiated sign-in;
 * - `replayed`: an assertion accepted before.
 */
export type SamlRefusalReason =
  | 'malformed'
  | 'unsupported'
  | 'idp-error'
  | 'unsigned'
  | 'bad-signature'
  | 'wrapped'
  | 'comment-in-name-id'
  | 'wrong-issuer'
  | 'wrong-audience'
  | 'wrong-destination'
  | 'wrong-recipient'
  | 'expired'
  | 'not-yet-valid'
  | 'unknown-in-response-to'
  | 'idp-initiated-disabled'
  | 'replayed';

/** A refused SAML response: a stable reason and a detail for logs and the audit trail, never for the user. */
export interface SamlRefusal {
  readonly reason: SamlRefusalReason;
  readonly detail: string;
  /** The IdP's status code, for `idp-error`. */
  readonly statusCode?: string;
}

/** Thrown inside the validation steps and turned into a {@link SamlRefusal} at its end. */
export class SamlRefusalError extends Error {
  readonly reason: SamlRefusalReason;
  readonly statusCode: string | undefined;

  constructor(reason: SamlRefusalReason, detail: string, statusCode?: string) {
    super(detail);
    this.name = 'SamlRefusalError';
    this.reason = reason;
    this.statusCode = statusCode;
  }
}

/** Shorthand for throwing a refusal. */
export function refuse(reason: SamlRefusalReason, detail: string): never {
  throw new SamlRefusalError(reason, detail);
}
