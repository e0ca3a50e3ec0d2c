import { z } from 'zod';

/** The flag key syntax. */
export const FLAG_KEY = /^[a-z0-9][a-z0-9._-]{0,99}$/;

const VariantName = z
  .string({ error: 'A variant name is text.' })
  .regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,49}$/, 'Use 1-50 letters, digits, dots, dashes or underscores.');

const FlagFields = z.object({
  name: z.string({ error: 'Enter a name.' }).trim().min(1, 'Enter a name.').max(200, 'Use at most 200 characters.'),
  description: z.string({ error: 'A description is text.' }).trim().max(500, 'Use at most 500 characters.').default(''),
  type: z.enum(['boolean', 'percentage', 'variant'], { error: 'Use boolean, percentage or variant.' }),
  defaultEnabled: z.boolean({ error: 'defaultEnabled is true or false.' }).default(false),
  rolloutPercentage: z
    .number({ error: 'rolloutPercentage is a number.' })
    .int('Use a whole number.')
    .min(0, 'Use 0 to 100.')
    .max(100, 'Use 0 to 100.')
    .default(0),
  variants: z
    .array(
      z.object({
        name: VariantName,
        weight: z.number({ error: 'A weight is a number.' }).int('Use a whole number.').min(0).max(10_000),
      }),
      { error: 'variants is a list.' },
    )
    .max(20, 'Use at most 20 variants.')
    .default([]),
  defaultVariant: VariantName.nullish().transform((value) => value ?? null),
});

function checkVariants(
  flag: { type: string; variants: Array<{ name: string; weight: number }>; defaultVariant: string | null },
  ctx: z.RefinementCtx,
) {
  if (flag.type !== 'variant') {
    if (flag.variants.length > 0)
      ctx.addIssue({ code: 'custom', path: ['variants'], message: 'Only variant flags have variants.' });
    if (flag.defaultVariant !== null) {
      ctx.addIssue({ code: 'custom', path: ['defaultVariant'], message: 'Only variant flags have a default variant.' });
    }
    return;
  }
  if (flag.variants.length === 0) {
    ctx.addIssue({ code: 'custom', path: ['variants'], message: 'A variant flag needs at least one variant.' });
    return;
  }
  const names = new Set(flag.variants.map((variant) => variant.name));
  if (names.size !== flag.variants.length)
    ctx.addIssue({ code: 'custom', path: ['variants'], message: 'Variant names must be unique.' });
  if (flag.variants.every((variant) => variant.weight === 0)) {
    ctx.addIssue({ code: 'custom', path: ['variants'], message: 'At least one variant needs a weight above 0.' });
  }
  if (flag.defaultVariant === null || !names.has(flag.defaultVariant)) {
    ctx.addIssue({ code: 'custom', path: ['defaultVariant'], message: 'Name one of the variants.' });
  }
}

/** The body of `POST /v1/platform/flags`. */
export const FlagCreateInput = FlagFields.extend({
  key: z
    .string({ error: 'Enter a key.' })
    .regex(FLAG_KEY, 'Use 1-100 lowercase letters, digits, dots, dashes or underscores, starting with a letter or digit.'),
}).superRefine(checkVariants);

/** A validated flag creation. */
export type FlagCreateInput = z.output<typeof FlagCreateInput>;

/** The body of `PUT /v1/platform/flags/{key}`: the whole definition but the key. */
export const FlagUpdateInput = FlagFields.superRefine(checkVariants);

/** A validated flag update. */
export type FlagUpdateInput = z.output<typeof FlagUpdateInput>;

const timestamp = z.string().meta({ format: 'date-time', description: 'ISO 8601 UTC' });

/** The body of `PUT /v1/configuration/flags/{key}/override`. */
export const FlagOverrideInput = z
  .object({
    enabled: z
      .boolean({ error: 'enabled is true or false.' })
      .nullish()
      .transform((value) => value ?? null),
    variant: VariantName.nullish().transform((value) => value ?? null),
    userId: z
      .string({ error: 'userId is a user id.' })
      .regex(/^[0-9a-fA-F-]{36}$/, 'Use a user id.')
      .nullish()
      .transform((value) => (value ? value.toLowerCase() : null))
      .describe('Override for this member only; absent for the whole organization.'),
    expiresAt: z.iso
      .datetime({ offset: true, error: 'Use an ISO 8601 date-time.' })
      .nullish()
      .transform((value) => (value ? new Date(value).toISOString() : null)),
  })
  .refine((value) => value.enabled !== null || value.variant !== null, {
    message: 'Set enabled, variant or both.',
    path: ['enabled'],
  });

/** A validated override. */
export type FlagOverrideInput = z.output<typeof FlagOverrideInput>;

/** The query of `DELETE /v1/configuration/flags/{key}/override`. */
export const FlagOverrideQuery = z.object({
  userId: z
    .string()
    .regex(/^[0-9a-fA-F-]{36}$/, 'Use a user id.')
    .optional()
    .transform((value) => (value ? value.toLowerCase() : null)),
});

const Variant = z.object({ name: z.string(), weight: z.number().int() });

/** A flag as the API answers it. */
export const FlagResponse = z.object({
  key: z.string(),
  name: z.string(),
  description: z.string(),
  type: z.enum(['boolean', 'percentage', 'variant']),
  defaultEnabled: z.boolean(),
  rolloutPercentage: z.number().int(),
  variants: z.array(Variant),
  defaultVariant: z.string().nullable(),
  createdAt: timestamp,
  updatedAt: timestamp,
});

/** A flag response. */
export type FlagResponse = z.output<typeof FlagResponse>;

/** An override as the API answers it. */
export const FlagOverrideResponse = z.object({
  userId: z.string().nullable().describe('null for the organization-wide override'),
  enabled: z.boolean().nullable(),
  variant: z.string().nullable(),
  expiresAt: timestamp.nullable(),
  isExpired: z.boolean(),
});

/** An override response. */
export type FlagOverrideResponse = z.output<typeof FlagOverrideResponse>;

/** A flag with the caller organization's overrides (`GET /v1/configuration/flags`). */
export const OrganizationFlagResponse = FlagResponse.extend({
  override: FlagOverrideResponse.nullable().describe("The organization's own override"),
  userOverrides: z.array(FlagOverrideResponse),
});

/** An organization flag response. */
export type OrganizationFlagResponse = z.output<typeof OrganizationFlagResponse>;

/** `{key: boolean | variant}`: the caller's flags. */
export const FlagValues = z.record(z.string(), z.union([z.boolean(), z.string()]));
