import { z } from 'zod';

/** The kinds of change an entry's items have. */
export const CHANGE_TYPES = ['Feature', 'Improvement', 'Fix', 'Breaking', 'Security', 'Deprecated'] as const;

/** One kind of change. */
export type ChangeType = (typeof CHANGE_TYPES)[number];

/** Semantic Versioning 2.0.0, the regular expression semver.org suggests (no leading `v`). */
export const SEMVER =
  /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$/;

/** The field limits of a changelog entry. */
export const CHANGELOG_LIMITS = Object.freeze({ version: 50, title: 200, content: 10_000, items: 100, itemDescription: 500 });

const MULTI_LINE = /^(?:[^\p{Cc}]|[\t\n\r])*$/u;

/** The body of `POST /v1/admin/changelog` and `PUT /v1/admin/changelog/{id}`. */
export const ChangelogInput = z.object({
  version: z
    .string({ error: 'Enter a version.' })
    .trim()
    .max(CHANGELOG_LIMITS.version, `Use at most ${CHANGELOG_LIMITS.version} characters.`)
    .regex(SEMVER, 'Use a semantic version such as 1.4.0 or 2.0.0-rc.1 (no leading v).')
    .meta({ examples: ['1.4.0'] }),
  title: z
    .string({ error: 'Enter a title.' })
    .trim()
    .min(1, 'Enter a title.')
    .max(CHANGELOG_LIMITS.title, `Use at most ${CHANGELOG_LIMITS.title} characters.`),
  content: z
    .string({ error: 'Content is text.' })
    .trim()
    .max(CHANGELOG_LIMITS.content, `Use at most ${CHANGELOG_LIMITS.content} characters.`)
    .regex(MULTI_LINE, 'Remove control characters other than tabs and line breaks.')
    .default('')
    .describe('Markdown or plain text; clients render it safely.'),
  releasedAt: z.iso
    .datetime({ offset: true, error: 'Use an ISO 8601 date-time.' })
    .optional()
    .transform((value) => (value ? new Date(value).toISOString() : undefined))
    .describe('Defaults to now.'),
  items: z
    .array(
      z.object({
        description: z
          .string({ error: 'Describe the change.' })
          .trim()
          .min(1, 'Describe the change.')
          .max(CHANGELOG_LIMITS.itemDescription, `Use at most ${CHANGELOG_LIMITS.itemDescription} characters.`),
        type: z.enum(CHANGE_TYPES, { error: `Use ${CHANGE_TYPES.join(', ')}.` }),
      }),
      { error: 'items is a list.' },
    )
    .max(CHANGELOG_LIMITS.items, `Use at most ${CHANGELOG_LIMITS.items} items.`)
    .default([]),
});

/** A validated changelog entry. */
export type ChangelogInput = z.output<typeof ChangelogInput>;

/** A changelog entry as the API answers it. */
export const ChangelogEntryResponse = z.object({
  id: z.string().meta({ format: 'uuid' }),
  version: z.string(),
  title: z.string(),
  content: z.string(),
  releasedAt: z.string().meta({ format: 'date-time' }),
  isPublished: z.boolean(),
  items: z.array(z.object({ description: z.string(), type: z.enum(CHANGE_TYPES) })),
});

/** A changelog entry response. */
export type ChangelogEntryResponse = z.output<typeof ChangelogEntryResponse>;

/** The query of `GET /v1/changelog`. */
export const ChangelogListQuery = z.object({
  limit: z.coerce
    .number({ error: 'Use a whole number from 1 to 100.' })
    .int('Use a whole number from 1 to 100.')
    .min(1, 'Use a whole number from 1 to 100.')
    .max(100, 'Use a whole number from 1 to 100.')
    .default(50),
});
