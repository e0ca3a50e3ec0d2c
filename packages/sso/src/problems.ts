import { registerProblemCodes } from '@idt/problem';

/** Error codes owned by `@idt/sso`. */
export const SsoCodes = registerProblemCodes('@idt/sso', {
  'Sso.InvalidMetadata': {
    kind: 'Validation',
    description:
      'The identity provider metadata could not be read: check that it is the SAML 2.0 metadata XML of an identity provider.',
  },
  'Sso.InvalidConnection': {
    kind: 'Validation',
    description: 'The single sign-on connection is incomplete or inconsistent.',
  },
  'Sso.InvalidDomain': {
    kind: 'Validation',
    description: 'Enter a domain name such as example.com: no address, port, path or IP literal.',
  },
  'Sso.ConnectionNotFound': {
    kind: 'NotFound',
    description: 'No such single sign-on connection here, or not one you may see.',
  },
  'Sso.DomainNotFound': {
    kind: 'NotFound',
    description: 'No such domain in this organization, or not one you may see.',
  },
  'Sso.DomainExists': {
    kind: 'Conflict',
    description: 'The organization has already added this domain: verify or delete the existing entry.',
  },
  'Sso.DomainTaken': {
    kind: 'Conflict',
    description: 'Another organization has verified this domain; a domain is verified by at most one organization.',
  },
  'Sso.DomainVerificationFailed': {
    kind: 'BusinessRule',
    description:
      'The verification TXT record was not found at the domain: publish it exactly as shown, wait for DNS to update, then try again.',
  },
  'Sso.DnsUnavailable': {
    kind: 'Unavailable',
    description: 'The DNS lookup failed or timed out; try again later.',
  },
  'Sso.MetadataUnreachable': {
    kind: 'BusinessRule',
    description:
      'The identity provider metadata URL could not be read: it must answer 200 with the XML within the time and size limits, from a host idt may reach.',
  },
});
