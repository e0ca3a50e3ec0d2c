import { z } from 'zod';
import { ANNOUNCEMENT_STATUSES, parseAnnouncementStatus } from './status.js';

/** The kinds of announcement. */
export const ANNOUNCEMENT_TYPES = ['Feature', 'Update', 'Maintenance', 'Alert', 'Tip'] as const;
/** One kind of announcement. */
export type AnnouncementType = (typeof ANNOUNCEMENT_TYPES)[number];

/** Who an announcement is for: every organization, the members of its organization, or those holding a role there. */
export const ANNOUNCEMENT_TARGETS = ['all', 'organization', 'role'] as const;
/** One target of an announcement. */
export type AnnouncementTarget = (typeof ANNOUNCEMENT_TARGETS)[number];

/** The field limits of an announcement. */
export const ANNOUNCEMENT_LIMITS = Object.freeze({
  title: 200,
  content: 5000,
  targetValue: 100,
  actionUrl: 500,
  actionLabel: 100,
});

const SINGLE_LINE = /^[^\p{Cc}]*$/u;
const MULTI_LINE = /^(?:[^\p{Cc}]|[\t\n\r])*$/u;
const dateTime = z.iso
  .datetime({ offset: true, error: 'Use an ISO 8601 date-time.' })
  .nullish()
  .transform((value) => (value ? new Date(value).toISOString() : null));
const optionalLine = (max: number) =>
  z
    .string({ error: 'Use text.' })
    .trim()
    .max(max, `Use at most ${max} characters.`)
    .regex(SINGLE_LINE, 'Remove control characters.')
    .nullish()
    .transform((value) => (value ? value : null));

/** The body of `POST /v1/admin/announcements` and `PUT /v1/admin/announcements/{id}`. */
export const AnnouncementInput = z
  .object({
    title: z
      .string({ error: 'Enter a title.' })
      .trim()
      .min(1, 'Enter a title.')
      .max(ANNOUNCEMENT_LIMITS.title, `Use at most ${ANNOUNCEMENT_LIMITS.title} characters.`)
      .regex(SINGLE_LINE, 'Remove control characters.'),
    content: z
      .string({ error: 'Enter the content.' })
      .trim()
      .min(1, 'Enter the content.')
      .max(ANNOUNCEMENT_LIMITS.content, `Use at most ${ANNOUNCEMENT_LIMITS.content} characters.`)
      .regex(MULTI_LINE, 'Remove control characters other than tabs and line breaks.')
      .refine((value) => !/<script/i.test(value), 'Remove <script> tags.'),
    type: z.enum(ANNOUNCEMENT_TYPES, { error: `Use ${ANNOUNCEMENT_TYPES.join(', ')}.` }),
    target: z.enum(ANNOUNCEMENT_TARGETS, { error: `Use ${ANNOUNCEMENT_TARGETS.join(', ')}.` }).default('organization'),
    targetValue: optionalLine(ANNOUNCEMENT_LIMITS.targetValue).describe('The role name, for target `role`.'),
    publishAt: dateTime.describe('In the future: the announcement is Scheduled and published then.'),
    expiresAt: dateTime,
    isPinned: z.boolean({ error: 'isPinned is true or false.' }).default(false),
    isDismissible: z.boolean({ error: 'isDismissible is true or false.' }).default(true),
    actionUrl: optionalLine(ANNOUNCEMENT_LIMITS.actionUrl).refine(
      (value) => value === null || /^https?:\/\/[^\s]+$/i.test(value) || /^\/(?!\/)[^\s]*$/.test(value),
      'Use an http(s) URL or a path starting with /.',
    ),
    actionLabel: optionalLine(ANNOUNCEMENT_LIMITS.actionLabel),
  })
  .superRefine((value, ctx) => {
    if (value.target === 'role' && value.targetValue === null) {
      ctx.addIssue({ code: 'custom', path: ['targetValue'], message: 'Name the role.' });
    }
    if (value.target !== 'role' && value.targetValue !== null) {
      ctx.addIssue({ code: 'custom', path: ['targetValue'], message: 'Only target role takes a value.' });
    }
    if (value.publishAt !== null && value.expiresAt !== null && Date.parse(value.expiresAt) <= Date.parse(value.publishAt)) {
      ctx.addIssue({ code: 'custom', path: ['expiresAt'], message: 'Expire after the publication time.' });
    }
  });

/** A validated announcement. */
export type AnnouncementInput = z.output<typeof AnnouncementInput>;

const timestamp = z.string().meta({ format: 'date-time', description: 'ISO 8601 UTC' });

/** An announcement as the API answers it. */
export const AnnouncementResponse = z.object({
  id: z.string().meta({ format: 'uuid' }),
  title: z.string(),
  content: z.string(),
  type: z.enum(ANNOUNCEMENT_TYPES),
  target: z.enum(ANNOUNCEMENT_TARGETS),
  targetValue: z.string().nullable(),
  status: z.enum(ANNOUNCEMENT_STATUSES),
  publishAt: timestamp.nullable(),
  expiresAt: timestamp.nullable(),
  isPinned: z.boolean(),
  isDismissible: z.boolean(),
  actionUrl: z.string().nullable(),
  actionLabel: z.string().nullable(),
  createdAt: timestamp,
  updatedAt: timestamp,
});

/** An announcement response. */
export type AnnouncementResponse = z.output<typeof AnnouncementResponse>;

/** The query of `GET /v1/admin/announcements`: an optional status; values that name none are ignored. */
export const AnnouncementListQuery = z.object({
  status: z
    .unknown()
    .optional()
    .transform((value) => parseAnnouncementStatus(Array.isArray(value) ? value[0] : value))
    .meta({ type: 'string', description: `${ANNOUNCEMENT_STATUSES.join(', ')}, in any case.` } as Record<string, unknown>),
});
