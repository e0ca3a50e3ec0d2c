import { createHash } from 'node:crypto';

/** The kinds of feature flag. */
export type FlagType = 'boolean' | 'percentage' | 'variant';

/** One variant of a variant flag and its relative weight. */
export interface FlagVariant {
  readonly name: string;
  readonly weight: number;
}

/** A feature flag as platform administrators define it. */
export interface FlagDefinition {
  readonly key: string;
  readonly name: string;
  readonly description: string;
  readonly type: FlagType;
  readonly defaultEnabled: boolean;
  /** 0..100; percentage flags enable this share of users. */
  readonly rolloutPercentage: number;
  readonly variants: readonly FlagVariant[];
  /** The variant of callers without a user and of a disabled variant flag; `null` for other types. */
  readonly defaultVariant: string | null;
}

/** An organization's (userId `null`) or one user's override of a flag. */
export interface FlagOverride {
  readonly flagKey: string;
  readonly organizationId: string;
  readonly userId: string | null;
  readonly enabled: boolean | null;
  readonly variant: string | null;
  /** ISO 8601 UTC; the override stops applying at this instant. */
  readonly expiresAt: string | null;
}

/** The answer for one flag: on/off, or the variant name. */
export type FlagValue = boolean | string;

/**
 * The bucket of `userId` for `flagKey`: the first 4 bytes of
 * SHA-256(`flagKey:userId`) as an unsigned big-endian integer. It depends on
 * nothing but the two strings, so every instance and every restart agrees.
 */
export function flagBucket(flagKey: string, userId: string): number {
  return createHash('sha256').update(`${flagKey}:${userId}`, 'utf8').digest().readUInt32BE(0);
}

function isActive(override: FlagOverride | undefined, now: Date): override is FlagOverride {
  return override !== undefined && (override.expiresAt === null || Date.parse(override.expiresAt) > now.getTime());
}

function weightedVariant(flag: FlagDefinition, userId: string): string | null {
  const total = flag.variants.reduce((sum, variant) => sum + variant.weight, 0);
  if (total <= 0) return flag.defaultVariant;
  let point = flagBucket(flag.key, userId) % total;
  for (const variant of flag.variants) {
    if (point < variant.weight) return variant.name;
    point -= variant.weight;
  }
  return flag.defaultVariant;
}

/** Who a flag is evaluated for. */
export interface FlagSubject {
  /** `null` for a service account or API call without a user. */
  readonly userId: string | null;
  /** This user's override in their organization, if any. */
  readonly userOverride?: FlagOverride | undefined;
  /** The organization's override, if any. */
  readonly organizationOverride?: FlagOverride | undefined;
}

/**
 * Evaluates a flag. The first override that has not expired at `now` wins,
 * the user's before the organization's:
 * - `boolean`: the override's `enabled`, else `defaultEnabled`;
 * - `percentage`: the override's `enabled`, else — with a user — whether
 *   the user's bucket modulo 100 is below `rolloutPercentage`, and without a
 *   user `defaultEnabled`;
 * - `variant`: the override's `variant`; an override or default that
 *   disables the flag gives `defaultVariant`; else — with a user — the
 *   variant the bucket falls on, walking the weights in order, and without a
 *   user `defaultVariant`.
 */
export function evaluateFlag(flag: FlagDefinition, subject: FlagSubject, now: Date): FlagValue {
  const override = [subject.userOverride, subject.organizationOverride].find((candidate) => isActive(candidate, now));
  switch (flag.type) {
    case 'boolean':
      return override?.enabled ?? flag.defaultEnabled;
    case 'percentage': {
      if (override?.enabled !== undefined && override.enabled !== null) return override.enabled;
      if (subject.userId === null) return flag.defaultEnabled;
      return flagBucket(flag.key, subject.userId) % 100 < flag.rolloutPercentage;
    }
    case 'variant': {
      const fallback = flag.defaultVariant ?? flag.variants[0]?.name ?? '';
      if (override?.variant && flag.variants.some((variant) => variant.name === override.variant)) return override.variant;
      const enabled = override?.enabled ?? flag.defaultEnabled;
      if (!enabled || subject.userId === null) return fallback;
      return weightedVariant(flag, subject.userId) ?? fallback;
    }
  }
}
