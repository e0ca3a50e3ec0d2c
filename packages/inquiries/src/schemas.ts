import { z } from 'zod';
import { INQUIRY_STATUSES, parseInquiryStatus } from './status.js';

/** The field limits of an inquiry and a comment (SPEC 8.2, plus the project's choices for the rest). */
export const INQUIRY_LIMITS = Object.freeze({
  name: 200,
  email: 254,
  phone: 50,
  company: 200,
  projectType: 100,
  budgetRange: 100,
  timeline: 100,
  message: 5000,
  commentContent: 5000,
  authorName: 200,
});

const SINGLE_LINE = /^[^\p{Cc}]*$/u;
// Free text keeps tabs and line breaks but no other control characters.
const MULTI_LINE = /^(?:[^\p{Cc}]|[\t\n\r])*$/u;

function line(label: string, max: number) {
  return z
    .string({ error: `Enter ${label}.` })
    .trim()
    .min(1, `Enter ${label}.`)
    .max(max, `Use at most ${max} characters.`)
    .regex(SINGLE_LINE, 'Remove control characters.');
}

function text(label: string, max: number) {
  return z
    .string({ error: `Enter ${label}.` })
    .trim()
    .min(1, `Enter ${label}.`)
    .max(max, `Use at most ${max} characters.`)
    .regex(MULTI_LINE, 'Remove control characters other than tabs and line breaks.');
}

/** The body of `POST /v1/inquiries`. The submitter comes from the token, never from here. */
export const InquiryInput = z.object({
  name: line('your name', INQUIRY_LIMITS.name),
  email: z
    .string({ error: 'Enter an e-mail address.' })
    .trim()
    .min(1, 'Enter an e-mail address.')
    .max(INQUIRY_LIMITS.email, `An e-mail address has at most ${INQUIRY_LIMITS.email} characters.`)
    .pipe(z.email({ error: 'Enter a valid e-mail address.' }))
    .meta({ format: 'email', example: 'ada@example.com' }),
  phone: line('a phone number', INQUIRY_LIMITS.phone),
  company: z
    .string({ error: 'A company is text.' })
    .trim()
    .max(INQUIRY_LIMITS.company, `Use at most ${INQUIRY_LIMITS.company} characters.`)
    .regex(SINGLE_LINE, 'Remove control characters.')
    .nullish()
    .transform((value) => (value ? value : null))
    .describe('Optional; empty means none.'),
  projectType: line('the type of project', INQUIRY_LIMITS.projectType),
  budgetRange: line('a budget range', INQUIRY_LIMITS.budgetRange),
  timeline: line('a timeline', INQUIRY_LIMITS.timeline),
  message: text('a message', INQUIRY_LIMITS.message),
});

/** A validated inquiry submission. */
export type InquiryInput = z.output<typeof InquiryInput>;

/** `newStatus`, one of the status names in any case. */
export const InquiryStatusName = z
  .string({ error: `Use ${INQUIRY_STATUSES.join(', ')}.` })
  .transform((value, ctx) => {
    const status = parseInquiryStatus(value);
    if (!status) {
      ctx.addIssue({ code: 'custom', message: `Use ${INQUIRY_STATUSES.join(', ')}.` });
      return z.NEVER;
    }
    return status;
  })
  .meta({ description: `${INQUIRY_STATUSES.join(', ')}; case-insensitive.`, examples: ['Reviewed'] });

/** The body of `PATCH /v1/inquiries/{id}/status`. */
export const ChangeStatusInput = z.object({ newStatus: InquiryStatusName });

/** The body of `POST /v1/inquiries/{id}/comments`. */
export const CommentInput = z.object({
  content: text('a comment', INQUIRY_LIMITS.commentContent),
  isInternal: z
    .boolean({ error: 'isInternal is true or false.' })
    .default(false)
    .describe('Staff-only note; needs InquiriesRead to write and to read.'),
});

/** A validated comment. */
export type CommentInput = z.output<typeof CommentInput>;

/** The query of `GET /v1/inquiries`: an optional status; values that name no status are ignored. */
export const InquiryListQuery = z.object({
  status: z
    .unknown()
    .optional()
    .transform((value) => parseInquiryStatus(Array.isArray(value) ? value[0] : value))
    .meta({
      type: 'string',
      description: `${INQUIRY_STATUSES.join(', ')}, in any case; other values are ignored.`,
    } as Record<string, unknown>),
});

const timestamp = z.string().meta({ format: 'date-time', description: 'ISO 8601 UTC' });

/** An inquiry as the API answers it (SPEC 2.5). The submitter's IP address is never part of it. */
export const InquiryResponse = z.object({
  id: z.string().meta({ format: 'uuid' }),
  name: z.string(),
  email: z.string(),
  phone: z.string(),
  company: z.string().nullable(),
  submitterId: z.string().nullable().describe('The submitting user; null for a service account.'),
  projectType: z.string(),
  budgetRange: z.string(),
  timeline: z.string(),
  message: z.string(),
  status: z.enum(INQUIRY_STATUSES),
  createdAt: timestamp,
  updatedAt: timestamp.describe('ISO 8601 UTC; the creation time until the first change.'),
});

/** An inquiry response. */
export type InquiryResponse = z.output<typeof InquiryResponse>;

/** A comment as the API answers it. */
export const CommentResponse = z.object({
  id: z.string().meta({ format: 'uuid' }),
  inquiryId: z.string().meta({ format: 'uuid' }),
  authorId: z.string().describe('The user id, or the client id of a service account.'),
  authorName: z.string(),
  content: z.string(),
  isInternal: z.boolean(),
  createdAt: timestamp,
});

/** A comment response. */
export type CommentResponse = z.output<typeof CommentResponse>;

/** The answer of `POST /v1/inquiries/{id}/comments`. */
export const CommentCreated = z.object({ id: z.string().meta({ format: 'uuid' }) });
