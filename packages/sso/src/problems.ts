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
});
