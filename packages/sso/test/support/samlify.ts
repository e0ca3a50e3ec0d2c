import { createRequire } from 'node:module';

/** The part of a samlify service provider the test identity provider uses. */
export interface SamlifyServiceProvider {
  readonly entityMeta: {
    getAssertionConsumerService(binding: string): string | string[];
    getEntityID(): string;
  };
}

/** The part of a samlify identity provider the tests use. */
export interface SamlifyIdentityProvider {
  getMetadata(): string;
  parseLoginRequest(
    sp: SamlifyServiceProvider,
    binding: string,
    request: { query: Record<string, string>; octetString: string },
  ): Promise<{ extract: { request: unknown } }>;
  createLoginResponse(
    sp: SamlifyServiceProvider,
    requestInfo: object,
    binding: string,
    user: object,
    options: { customTagReplacement: (template: string) => { id: string; context: string } },
  ): Promise<{ context: string }>;
}

/** The part of samlify 2 the tests use. */
export interface Samlify {
  setSchemaValidator(validator: { validate(xml: string): Promise<string> }): void;
  IdentityProvider(settings: Record<string, unknown>): SamlifyIdentityProvider;
  ServiceProvider(settings: Record<string, unknown>): SamlifyServiceProvider;
  readonly Constants: {
    readonly namespace: { readonly binding: { readonly redirect: string; readonly post: string } };
    readonly wording: { readonly binding: { readonly redirect: string; readonly post: string } };
  };
  readonly SamlLib: { replaceTagsByValue(template: string, tags: Record<string, unknown>): string };
}

/**
 * samlify, loaded through require: its typings import `@xmldom/xmldom`'s,
 * which pull TypeScript's `dom` library into the whole program and break
 * other packages' `fetch` types.
 */
export const samlify = createRequire(import.meta.url)('samlify') as Samlify;
