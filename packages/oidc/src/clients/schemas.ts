import { isMetadataHost } from '@idt/core';
import { z } from 'zod';

/** The kinds of OAuth client (SPEC 2.1). */
export const CLIENT_KINDS = ['application', 'service-account'] as const;

/** `application` (confidential web client) or `service-account` (client credentials only). */
export type ClientKind = (typeof CLIENT_KINDS)[number];

/** Client status. */
export type ClientStatus = 'active' | 'suspended';

/** Hosts where a redirect URI may use plain http (SPEC 2.1: localhost and 127.0.0.1 only). */
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1']);

function parseAbsolute(value: string): URL | undefined {
  try {
    const url = new URL(value);
    return url;
  } catch {
    return undefined;
  }
}

/**
 * A redirect or post-logout redirect URI (SPEC 2.1): absolute, no fragment,
 * HTTPS; plain HTTP only for localhost and 127.0.0.1.
 */
export const RedirectUriSchema = z
  .string()
  .trim()
  .max(2000, 'A URI has at most 2000 characters.')
  .superRefine((value, ctx) => {
    const url = parseAbsolute(value);
    if (!url) {
      ctx.addIssue({ code: 'custom', message: 'Use an absolute URI.' });
      return;
    }
    if (value.includes('#')) ctx.addIssue({ code: 'custom', message: 'A redirect URI cannot have a fragment.' });
    if (url.username || url.password) ctx.addIssue({ code: 'custom', message: 'A redirect URI cannot carry credentials.' });
    if (url.protocol === 'https:') return;
    if (url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname)) return;
    ctx.addIssue({ code: 'custom', message: 'Use https; http is allowed only for localhost and 127.0.0.1.' });
  });

/** A logout URI's shape: absolute http(s), no fragment, no credentials. */
function checkLogoutUri(value: string, ctx: z.RefinementCtx): URL | undefined {
  const url = parseAbsolute(value);
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    ctx.addIssue({ code: 'custom', message: 'Use an absolute http or https URL.' });
    return undefined;
  }
  if (value.includes('#')) ctx.addIssue({ code: 'custom', message: 'A logout URI cannot have a fragment.' });
  if (url.username || url.password) ctx.addIssue({ code: 'custom', message: 'A logout URI cannot carry credentials.' });
  return url;
}

/** Why a back-channel logout URI naming a cloud metadata service is refused. */
export const METADATA_LOGOUT_URI_MESSAGE = 'A back-channel logout URI cannot point to a cloud metadata address.';

/**
 * A back-channel logout URI: absolute, no fragment, http or https, and not a
 * cloud metadata host (169.254.169.254, fd00:ec2::254,
 * metadata.google.internal and the like, in any spelling), which the server
 * would otherwise POST to whatever `IDT_BACKCHANNEL_ALLOW_PRIVATE_HOSTS` says.
 * Names that resolve to one are refused by the service at registration and
 * again at every delivery.
 */
export const BackchannelLogoutUriSchema = z
  .string()
  .trim()
  .max(2000, 'A URI has at most 2000 characters.')
  .superRefine((value, ctx) => {
    const url = checkLogoutUri(value, ctx);
    if (url && isMetadataHost(url.hostname)) ctx.addIssue({ code: 'custom', message: METADATA_LOGOUT_URI_MESSAGE });
  });

/** A front-channel logout URI: absolute http(s) URL without fragment (the browser loads it, not the server). */
export const FrontchannelLogoutUriSchema = z
  .string()
  .trim()
  .max(2000, 'A URI has at most 2000 characters.')
  .superRefine((value, ctx) => {
    checkLogoutUri(value, ctx);
  });

/** Refresh-token lifetime in seconds: 60 to 31,536,000 (one year). */
export const RefreshTokenLifetimeSchema = z
  .number()
  .int('Use whole seconds.')
  .min(60, 'The refresh-token lifetime is at least 60 seconds.')
  .max(31_536_000, 'The refresh-token lifetime is at most 31,536,000 seconds (one year).');

/** A client name: 1 to 200 characters with a letter or digit. */
export const ClientNameSchema = z
  .string({ error: 'Enter a name.' })
  .trim()
  .min(1, 'Enter a name.')
  .max(200, 'A name has at most 200 characters.')
  .regex(/[\p{L}\p{N}]/u, 'A name needs at least one letter or digit.')
  .regex(/^[^\p{Cc}]*$/u, 'A name cannot contain control characters.');

const ScopeList = z
  .array(z.string().trim().min(1).max(100), { error: 'List at least one scope.' })
  .min(1, 'List at least one scope.')
  .max(100, 'At most 100 scopes.')
  .transform((scopes) => [...new Set(scopes)]);

/** The body of a client registration (SPEC 4.1). */
export const RegisterClientInput = z
  .object({
    kind: z.enum(CLIENT_KINDS, { error: 'Use application or service-account.' }),
    name: ClientNameSchema,
    redirectUris: z.array(RedirectUriSchema).max(50).optional(),
    postLogoutRedirectUris: z.array(RedirectUriSchema).max(50).optional(),
    backchannelLogoutUri: BackchannelLogoutUriSchema.nullish(),
    backchannelLogoutSessionRequired: z.boolean().optional(),
    frontchannelLogoutUri: FrontchannelLogoutUriSchema.nullish(),
    scopes: ScopeList,
    refreshTokenLifetime: RefreshTokenLifetimeSchema.nullish(),
  })
  .superRefine((value, ctx) => {
    if (value.kind === 'application' && (value.redirectUris ?? []).length === 0) {
      ctx.addIssue({ code: 'custom', path: ['redirectUris'], message: 'An application needs at least one redirect URI.' });
    }
  });

/** Input of a client registration. */
export type RegisterClientInput = z.input<typeof RegisterClientInput>;

/** The body of a client update (SPEC 4.1): no kind, no name. */
export const UpdateClientInput = z.object({
  redirectUris: z.array(RedirectUriSchema).max(50).optional(),
  postLogoutRedirectUris: z.array(RedirectUriSchema).max(50).optional(),
  backchannelLogoutUri: BackchannelLogoutUriSchema.nullish(),
  backchannelLogoutSessionRequired: z.boolean().optional(),
  frontchannelLogoutUri: FrontchannelLogoutUriSchema.nullish(),
  scopes: ScopeList.optional(),
  refreshTokenLifetime: RefreshTokenLifetimeSchema.nullish(),
});

/** Input of a client update. */
export type UpdateClientInput = z.input<typeof UpdateClientInput>;

/** A scope row to add or update (seeding): an RFC 6749 scope token and what it grants. */
export const ScopeRowInput = z.object({
  scope: z
    .string({ error: 'Enter a scope.' })
    .trim()
    .min(1, 'Enter a scope.')
    .max(100, 'A scope has at most 100 characters.')
    .regex(/^[\x21\x23-\x5B\x5D-\x7E]+$/, 'A scope is printable ASCII without spaces, quotes or backslashes.'),
  description: z
    .string({ error: 'Enter a description.' })
    .trim()
    .min(1, 'Enter a description.')
    .max(500, 'A description has at most 500 characters.'),
  default: z.boolean().default(false),
  platformOnly: z.boolean().default(false),
});

/** Input of a scope row upsert. */
export type ScopeRowInput = z.input<typeof ScopeRowInput>;

/** The body of rotate-secret; optional. */
export const RotateSecretInput = z
  .object({ revokeActiveTokens: z.boolean().optional() })
  .optional()
  .transform((value) => ({ revokeActiveTokens: value?.revokeActiveTokens ?? false }));

const Color = z
  .string()
  .trim()
  .regex(/^#([0-9a-fA-F]{3}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})$/, 'Use a hex color such as #1f6feb.');

const ThemeColors = z.object({ primary: Color, primaryForeground: Color }).strict();

/** Client branding theme: colors for light and dark mode. */
export const ThemeSchema = z.object({ light: ThemeColors, dark: ThemeColors }).strict();

/** The body of a branding update (logo sent separately as base64). */
export const BrandingInput = z.object({
  displayName: z.string().trim().min(1, 'Enter a display name.').max(200, 'A display name has at most 200 characters.'),
  tagline: z.string().trim().max(500, 'A tagline has at most 500 characters.').nullish(),
  themeJson: ThemeSchema.nullish(),
  /** A PNG, JPEG or WebP image, base64-encoded, at most 2 MiB decoded; `null` removes the logo. */
  logo: z.string().max(2_900_000, 'A logo is at most 2 MiB.').nullish(),
});

/** Input of a branding update. */
export type BrandingInput = z.input<typeof BrandingInput>;

/** The client record of the API (SPEC 2.1 and SPEC-NOTES). */
export const ClientRecordSchema = z.object({
  clientId: z.string(),
  organizationId: z.string().nullable(),
  name: z.string(),
  kind: z.enum(CLIENT_KINDS),
  status: z.enum(['active', 'suspended']),
  firstParty: z.boolean(),
  redirectUris: z.array(z.string()),
  postLogoutRedirectUris: z.array(z.string()),
  backchannelLogoutUri: z.string().nullable(),
  backchannelLogoutSessionRequired: z.boolean(),
  frontchannelLogoutUri: z.string().nullable(),
  scopes: z.array(z.string()),
  refreshTokenLifetime: z.number().nullable(),
  createdByUserId: z.string().nullable(),
  createdAt: z.string(),
  updatedAt: z.string(),
  lastUsedAt: z.string().nullable(),
  lastRotatedAt: z.string().nullable(),
  lastRotatedByUserId: z.string().nullable(),
});

/** A client as the API shows it. */
export type ClientRecord = z.infer<typeof ClientRecordSchema>;

/** Branding as the API shows it. */
export const BrandingSchema = z.object({
  displayName: z.string(),
  tagline: z.string().nullable(),
  themeJson: ThemeSchema.nullable(),
  /** The logo as a `data:` URL, so showing it needs no anonymous read by client id. */
  logo: z.string().nullable(),
});

/** Branding of a client. */
export type Branding = z.infer<typeof BrandingSchema>;
