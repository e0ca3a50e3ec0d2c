import { ProblemError, ValidationProblem } from '@idt/problem';
import { z } from 'zod';
import type { Principal } from '../auth/principal.js';
import { json } from '../http/responses.js';
import { defineRoute, type Route } from '../http/route.js';
import { isUuid } from '../ids.js';
import type { Logger } from '../logger.js';
import { chainOf } from './chain.js';
import { AUDIT_ACTION_PATTERN, AUDIT_ACTOR_TYPES, AUDIT_OUTCOMES, type AuditRecord } from './entry.js';
import './problems.js';
import type { AuditQuery } from './store.js';
import type { AuditTrail } from './trail.js';

/** The permission that reads an organization's audit trail (granted to owners and admins). */
export const AUDIT_READ_PERMISSION = 'AuditRead';

/** The largest page of `GET /v1/audit/events`. */
export const MAX_AUDIT_PAGE = 200;

const Party = z.object({ type: z.string(), id: z.string().nullable(), display: z.string().nullable() });

/** An audit record as the API shows it. */
export const AuditRecordSchema = z.object({
  id: z.string(),
  sequence: z.number().int().describe('The position in its chain, from 1, without gaps.'),
  occurredAt: z.string(),
  organizationId: z.string().nullable().describe('`null` on the platform trail.'),
  actor: Party.extend({ type: z.enum(AUDIT_ACTOR_TYPES) }),
  action: z.string().describe('A dotted name such as `identity.password.reset`.'),
  target: Party.nullable(),
  outcome: z.enum(AUDIT_OUTCOMES),
  ip: z.string().nullable(),
  userAgent: z.string().nullable(),
  traceId: z.string().nullable(),
  metadata: z.record(z.string(), z.unknown()),
  prevHash: z.string().describe('The hash of the previous record of the chain (64 zeros for the first).'),
  hash: z.string().describe('SHA-256 over the previous hash and this record’s canonical form (see docs/audit.md).'),
});

const AuditPageSchema = z.object({
  items: z.array(AuditRecordSchema),
  nextCursor: z.string().nullable().describe('Pass as `cursor` for the next (older) page; `null` on the last.'),
});

const AuditVerificationSchema = z.object({
  organizationId: z.string().nullable(),
  valid: z.boolean(),
  checked: z.number().int(),
  anchorSequence: z.number().int(),
  headSequence: z.number().int(),
  broken: z
    .object({
      sequence: z.number().int(),
      id: z.string().nullable(),
      reason: z.enum(['edited', 'relinked', 'missing']),
      message: z.string(),
    })
    .nullable(),
});

const Organization = z
  .string()
  .max(36)
  .refine((value) => value === 'platform' || isUuid(value), 'An organization id (a GUID), or `platform`.')
  .transform((value) => value.toLowerCase())
  .optional()
  .describe(
    'Platform administrators only: another organization’s trail, or `platform` for the platform trail. Others get 404 for any organization but their own.',
  );

const Instant = (what: string) =>
  z.iso
    .datetime({ offset: true, message: `${what} is an ISO 8601 date and time, e.g. 2026-01-31T12:00:00Z.` })
    .transform((value) => new Date(value).toISOString())
    .optional();

/** The filters every read takes. */
const FilterQuery = z.object({
  organizationId: Organization,
  action: z
    .string()
    .max(200)
    .regex(AUDIT_ACTION_PATTERN, 'An action is a dotted name such as identity.password.reset.')
    .optional(),
  actorId: z.string().min(1).max(200).optional(),
  targetId: z.string().min(1).max(200).optional(),
  outcome: z.enum(AUDIT_OUTCOMES).optional(),
  from: Instant('from').describe('Records at or after this instant.'),
  to: Instant('to').describe('Records before this instant.'),
});

/** An opaque cursor: the chain and the sequence of the last record of the previous page. */
interface AuditCursor {
  readonly chain: string;
  readonly before: number;
}

function encodeAuditCursor(cursor: AuditCursor): string {
  return Buffer.from(JSON.stringify([1, cursor.chain, cursor.before]), 'utf8').toString('base64url');
}

function decodeAuditCursor(value: string): AuditCursor | undefined {
  try {
    const parsed: unknown = JSON.parse(Buffer.from(value, 'base64url').toString('utf8'));
    if (!Array.isArray(parsed) || parsed.length !== 3 || parsed[0] !== 1) return undefined;
    const [, chain, before] = parsed as [number, unknown, unknown];
    if (typeof chain !== 'string' || chain.length === 0 || chain.length > 36) return undefined;
    if (!Number.isSafeInteger(before) || (before as number) < 1) return undefined;
    return { chain, before: before as number };
  } catch {
    return undefined;
  }
}

const ListQuery = FilterQuery.extend({
  cursor: z
    .string()
    .max(200)
    .transform((value, context) => {
      const cursor = decodeAuditCursor(value);
      if (!cursor) {
        context.addIssue({ code: 'custom', message: 'This is not a cursor this server wrote: pass nextCursor as it came.' });
        return z.NEVER;
      }
      return cursor;
    })
    .optional(),
  limit: z.coerce
    .number({ error: 'limit is a number.' })
    .int('limit is a whole number.')
    .min(1, 'limit is at least 1.')
    .max(MAX_AUDIT_PAGE, `limit is at most ${MAX_AUDIT_PAGE}.`)
    .default(50),
});

const ExportQuery = FilterQuery.extend({
  format: z.enum(['ndjson', 'csv']).default('ndjson'),
});

const VerifyQuery = z.object({ organizationId: Organization });

/** Options of {@link createAuditRoutes}. */
export interface AuditRoutesOptions {
  readonly audit: AuditTrail;
  /**
   * Whether the caller administers the platform (may read any organization's
   * trail and the platform trail): the identity module answers this.
   */
  readonly isPlatformAdministrator: (principal: Principal) => Promise<boolean>;
  readonly logger?: Logger;
  /** Records read per query while exporting; 250 by default. */
  readonly exportBatchSize?: number;
}

/** Records read per query while exporting. */
const EXPORT_BATCH = 250;

const TAGS = ['Audit'];
const forbidden = { description: 'The caller lacks `AuditRead` (`Auth.Forbidden`), or has no organization (`Tenant.Required`)' };
const notFound = {
  description:
    'Another organization’s trail, or the platform trail, asked for by someone who is not a platform administrator (`Audit.OrganizationNotFound`)',
};
const invalid = { description: 'A malformed filter, cursor, limit or format (`Validation.Failed`)' };

function checkRange(query: { from?: string | undefined; to?: string | undefined }): void {
  if (query.from !== undefined && query.to !== undefined && query.from > query.to) {
    throw new ValidationProblem({ to: ['to is before from.'] });
  }
}

const CSV_COLUMNS = [
  'id',
  'sequence',
  'occurredAt',
  'organizationId',
  'actorType',
  'actorId',
  'actorDisplay',
  'action',
  'targetType',
  'targetId',
  'targetDisplay',
  'outcome',
  'ip',
  'userAgent',
  'traceId',
  'metadata',
  'prevHash',
  'hash',
] as const;

const CSV_HEADER = `${CSV_COLUMNS.join(',')}\r\n`;

/** The size of the chunks an export is written in: well below V8's large-object size, so each dies young. */
const EXPORT_CHUNK_BYTES = 64 * 1024;

/**
 * The bytes of an export, in chunks of about {@link EXPORT_CHUNK_BYTES}:
 * each line is encoded straight into the current chunk (no joined string,
 * no encoded copy of it), and a chunk is handed over once the next line
 * might not fit.
 */
class ExportChunks {
  #buffer: Buffer | undefined;
  #used = 0;

  /** Appends a line; returns the chunk it completed, if any. */
  write(text: string): Uint8Array | undefined {
    // UTF-8 takes at most 3 bytes per UTF-16 code unit.
    const room = text.length * 3;
    let full: Uint8Array | undefined;
    if (this.#buffer && this.#used + room > this.#buffer.length) full = this.take();
    this.#buffer ??= Buffer.allocUnsafeSlow(Math.max(EXPORT_CHUNK_BYTES, room));
    this.#used += this.#buffer.write(text, this.#used, 'utf8');
    return full;
  }

  /** The bytes written since the last chunk, or `undefined` when there are none. */
  take(): Uint8Array | undefined {
    const buffer = this.#buffer;
    if (!buffer || this.#used === 0) return undefined;
    const chunk = buffer.subarray(0, this.#used);
    this.#buffer = undefined;
    this.#used = 0;
    return chunk;
  }
}

// Made once: a regular expression literal in a function makes a new object at every call (18 fields a record).
const CSV_FORMULA = /^[=+\-@\t\r]/;
const CSV_QUOTED = /[",\r\n]/;
const CSV_QUOTE = /"/g;

/**
 * One CSV field: quoted when it holds a separator, quote or line break;
 * a leading `=`, `+`, `-`, `@`, tab or carriage return is neutralized with
 * a `'` so a spreadsheet never runs a name someone chose as a formula.
 */
function csvField(value: string | number | null): string {
  if (value === null) return '';
  if (typeof value === 'number') return String(value);
  const safe = CSV_FORMULA.test(value) ? `'${value}` : value;
  return CSV_QUOTED.test(safe) ? `"${safe.replace(CSV_QUOTE, '""')}"` : safe;
}

/** A record as one CSV line (with its line break), in {@link CSV_COLUMNS}' order. */
export function auditCsvLine(record: AuditRecord): string {
  // One template rather than an array of fields: the export writes a line per record.
  const { actor, target } = record;
  return (
    `${csvField(record.id)},${record.sequence},${csvField(record.occurredAt)},${csvField(record.organizationId)},` +
    `${csvField(actor.type)},${csvField(actor.id)},${csvField(actor.display)},${csvField(record.action)},` +
    `${csvField(target?.type ?? null)},${csvField(target?.id ?? null)},${csvField(target?.display ?? null)},` +
    `${csvField(record.outcome)},${csvField(record.ip)},${csvField(record.userAgent)},${csvField(record.traceId)},` +
    `${csvField(JSON.stringify(record.metadata))},${csvField(record.prevHash)},${csvField(record.hash)}\r\n`
  );
}

/**
 * The audit routes: `GET /v1/audit/events` (keyset pages, newest first),
 * `GET /v1/audit/events/export` (NDJSON or CSV, streamed in keyset batches,
 * oldest first) and `GET /v1/audit/verify`. All need `AuditRead` in the
 * token's organization and read that organization's trail; platform
 * administrators may name another organization, or `platform`.
 *
 * @example
 * routes.push(...createAuditRoutes({ audit: ctx.audit, isPlatformAdministrator }));
 */
export function createAuditRoutes(options: AuditRoutesOptions): Route[] {
  const { audit } = options;
  const batchSize = options.exportBatchSize ?? EXPORT_BATCH;

  /** The chain the caller may read: its own organization's, or (platform administrators) the one named. */
  async function chainFor(principal: Principal | null, requested: string | undefined): Promise<string | null> {
    const own = principal?.organizationId ?? null;
    if (!principal || own === null) throw new ProblemError('Tenant.Required');
    if (requested === undefined || requested === own) return own;
    if (!(await options.isPlatformAdministrator(principal))) throw new ProblemError('Audit.OrganizationNotFound');
    return requested === 'platform' ? null : requested;
  }

  function queryOf(organizationId: string | null, query: z.output<typeof FilterQuery>): AuditQuery {
    checkRange(query);
    return {
      organizationId,
      ...(query.action !== undefined ? { action: query.action } : {}),
      ...(query.actorId !== undefined ? { actorId: query.actorId } : {}),
      ...(query.targetId !== undefined ? { targetId: query.targetId } : {}),
      ...(query.outcome !== undefined ? { outcome: query.outcome } : {}),
      ...(query.from !== undefined ? { from: query.from } : {}),
      ...(query.to !== undefined ? { to: query.to } : {}),
    };
  }

  return [
    defineRoute({
      method: 'GET',
      path: '/v1/audit/events',
      operationId: 'listAuditEvents',
      summary: 'Read the audit trail',
      description:
        'The organization’s audit records, newest first, filtered by action, actor, target, outcome and time. Pages are keyset pages: `nextCursor` stays valid, and no record is skipped or repeated, while new records are written.',
      tags: TAGS,
      permissions: [AUDIT_READ_PERMISSION],
      request: { query: ListQuery },
      responses: {
        200: { description: 'A page of records', schema: AuditPageSchema },
        400: invalid,
        403: forbidden,
        404: notFound,
      },
      problemCodes: ['Audit.OrganizationNotFound'],
      handler: async ({ principal, query }) => {
        const organizationId = await chainFor(principal, query.organizationId);
        const filters = queryOf(organizationId, query);
        if (query.cursor && query.cursor.chain !== chainOf(organizationId)) {
          throw new ValidationProblem({ cursor: ['This cursor belongs to another trail: start again without it.'] });
        }
        const rows = await audit.list(filters, {
          ...(query.cursor ? { beforeSequence: query.cursor.before } : {}),
          limit: query.limit + 1,
        });
        const items = rows.slice(0, query.limit);
        const last = items.at(-1);
        const nextCursor =
          rows.length > query.limit && last ? encodeAuditCursor({ chain: chainOf(organizationId), before: last.sequence }) : null;
        return json({ items, nextCursor });
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/audit/events/export',
      operationId: 'exportAuditEvents',
      summary: 'Export the audit trail',
      description:
        'Every matching record, oldest first, as NDJSON (one record per line, hashes included, so the chain can be checked offline) or CSV. Streamed: the server reads the records in batches as the client takes them.',
      tags: TAGS,
      permissions: [AUDIT_READ_PERMISSION],
      request: { query: ExportQuery },
      responses: {
        200: { description: 'The records, one per line', contentType: 'application/x-ndjson' },
        400: invalid,
        403: forbidden,
        404: notFound,
      },
      problemCodes: ['Audit.OrganizationNotFound'],
      handler: async ({ principal, query, signal }) => {
        const organizationId = await chainFor(principal, query.organizationId);
        const filters = queryOf(organizationId, query);
        const csv = query.format === 'csv';
        const batches = audit.batches(filters, batchSize);
        const chunks = new ExportChunks();
        if (csv) chunks.write(CSV_HEADER);
        const body = new ReadableStream<Uint8Array>({
          async pull(controller) {
            try {
              // Each pull hands over at least one chunk (or ends the stream): a pull that enqueues nothing is not called again.
              let enqueued = false;
              while (!enqueued) {
                if (signal.aborted) throw new Error('The client went away');
                const next = await batches.next();
                if (next.done) {
                  const rest = chunks.take();
                  if (rest) controller.enqueue(rest);
                  controller.close();
                  return;
                }
                for (const record of next.value) {
                  const full = chunks.write(csv ? auditCsvLine(record) : `${JSON.stringify(record)}\n`);
                  if (full) {
                    controller.enqueue(full);
                    enqueued = true;
                  }
                }
              }
            } catch (error) {
              options.logger?.warn('audit export failed', { error });
              controller.error(error);
              await batches.return(undefined);
            }
          },
          async cancel() {
            await batches.return(undefined);
          },
        });
        const name = `audit-${organizationId ?? 'platform'}.${csv ? 'csv' : 'ndjson'}`;
        return new Response(body, {
          status: 200,
          headers: {
            'content-type': csv ? 'text/csv; charset=utf-8' : 'application/x-ndjson',
            'content-disposition': `attachment; filename="${name}"`,
            'cache-control': 'no-store',
          },
        });
      },
    }),
    defineRoute({
      method: 'GET',
      path: '/v1/audit/verify',
      operationId: 'verifyAuditTrail',
      summary: 'Check the audit trail’s hash chain',
      description:
        'Walks the trail from its pruning checkpoint to its head and names the first broken link: a record edited (`edited`), reordered or relinked (`relinked`), or deleted (`missing`).',
      tags: TAGS,
      permissions: [AUDIT_READ_PERMISSION],
      request: { query: VerifyQuery },
      responses: { 200: { description: 'The result', schema: AuditVerificationSchema }, 403: forbidden, 404: notFound },
      problemCodes: ['Audit.OrganizationNotFound'],
      handler: async ({ principal, query }) => json(await audit.verify(await chainFor(principal, query.organizationId))),
    }),
  ];
}
