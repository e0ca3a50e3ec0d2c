import { type Clock, newId, type Principal, systemClock } from '@idt/core';
import { ProblemError } from '@idt/problem';
import { toIntegrationEvents } from './events.js';
import { CommentInput, type CommentResponse, INQUIRY_LIMITS, InquiryInput, type InquiryResponse } from './schemas.js';
import { canTransition, type InquiryStatus, nextStatus } from './status.js';
import type { CommentRecord, InquiriesStore, InquiryRecord } from './store.js';

/** The permission that shows every inquiry of the organization and its internal comments. */
export const INQUIRIES_READ = 'InquiriesRead';
/** The permission to submit inquiries, change their status and comment. */
export const INQUIRIES_WRITE = 'InquiriesWrite';

/** Who calls the inquiries service: the parts of a request's principal it decides on. A `Principal` is one. */
export type InquiryActor = Pick<
  Principal,
  'kind' | 'subject' | 'userId' | 'clientId' | 'organizationId' | 'permissions' | 'name'
>;

/** Facts about the submitting request. */
export interface SubmissionContext {
  /** The client IP address (the forwarded one behind a trusted proxy); stored, never returned. */
  readonly ip: string | null;
}

/** Options of {@link createInquiriesService}. */
export interface InquiriesServiceOptions {
  readonly store: InquiriesStore;
  readonly clock?: Clock;
}

/** Inquiries and their comments, in the caller's organization. */
export interface InquiriesService {
  /** Stores an inquiry of the caller (`InquiriesWrite`) and publishes `InquirySubmittedEvent` in the same transaction. */
  submit(actor: InquiryActor, input: InquiryInput, context: SubmissionContext): Promise<InquiryResponse>;
  /** Every inquiry of the organization, newest first, optionally of one status (`InquiriesRead`). */
  list(actor: InquiryActor, filter?: { status?: InquiryStatus | undefined }): Promise<InquiryResponse[]>;
  /** The caller's own inquiries, newest first; empty for a service account. */
  listSubmitted(actor: InquiryActor): Promise<InquiryResponse[]>;
  /** One inquiry; without `InquiriesRead` only the caller's own (404 otherwise). */
  get(actor: InquiryActor, id: string): Promise<InquiryResponse>;
  /** Moves an inquiry one step forward (`InquiriesWrite`, and the inquiry must be visible). */
  changeStatus(actor: InquiryActor, id: string, newStatus: InquiryStatus): Promise<InquiryResponse>;
  /** The comments of a visible inquiry, oldest first; internal ones only with `InquiriesRead`. */
  listComments(actor: InquiryActor, id: string): Promise<CommentResponse[]>;
  /** One comment of a visible inquiry; an internal one only with `InquiriesRead`. */
  getComment(actor: InquiryActor, id: string, commentId: string): Promise<CommentResponse>;
  /** Comments on a visible inquiry (`InquiriesWrite`; an internal comment also needs `InquiriesRead`). */
  addComment(actor: InquiryActor, id: string, input: CommentInput): Promise<{ id: string }>;
}

/** The user an inquiry is submitted by: `null` for a service account (its `azp` starts with `sa-`). */
export function submitterOf(actor: InquiryActor): string | null {
  if (actor.kind === 'service') return null;
  if (actor.clientId?.startsWith('sa-') && actor.subject === actor.clientId) return null;
  return actor.userId;
}

/** An inquiry record as the API answers it: without the organization and the IP address. */
export function toInquiryResponse(record: InquiryRecord): InquiryResponse {
  return {
    id: record.id,
    name: record.name,
    email: record.email,
    phone: record.phone,
    company: record.company,
    submitterId: record.submitterId,
    projectType: record.projectType,
    budgetRange: record.budgetRange,
    timeline: record.timeline,
    message: record.message,
    status: record.status,
    createdAt: record.createdAt,
    updatedAt: record.updatedAt ?? record.createdAt,
  };
}

function toCommentResponse(record: CommentRecord): CommentResponse {
  return {
    id: record.id,
    inquiryId: record.inquiryId,
    authorId: record.authorId,
    authorName: record.authorName,
    content: record.content,
    isInternal: record.isInternal,
    createdAt: record.createdAt,
  };
}

function tenantOf(actor: InquiryActor): string {
  if (actor.organizationId === null) throw new ProblemError('Tenant.Required');
  return actor.organizationId;
}

function requirePermission(actor: InquiryActor, permission: string): void {
  if (!actor.permissions.has(permission)) {
    throw new ProblemError('Auth.Forbidden', `This operation needs the ${permission} permission.`);
  }
}

function notFound(): ProblemError {
  return new ProblemError('Inquiry.NotFound', 'No such inquiry.');
}

function invalidTransition(from: InquiryStatus, to: InquiryStatus): ProblemError {
  const next = nextStatus(from);
  const hint = next ? `it can only move to ${next}` : 'it is closed';
  return new ProblemError('Inquiries.InvalidStatusTransition', `The inquiry is ${from}; ${hint}, not ${to}.`);
}

function normalizeIp(ip: string | null): string | null {
  if (!ip || ip === 'unknown') return null;
  return ip.slice(0, 64);
}

/** Ids are GUIDs: anything else cannot name an inquiry. */
const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * Creates the inquiries service. Visibility is one rule everywhere: a caller
 * with `InquiriesRead` sees every inquiry of its organization, anyone else
 * only the inquiries it submitted; an inquiry it may not see answers 404
 * `Inquiry.NotFound`, exactly as a missing one.
 *
 * @example
 * const inquiries = createInquiriesService({ store: createKnexInquiriesStore({ db, outbox: bus }) });
 * const created = await inquiries.submit(principal, input, { ip: ctx.clientIp });
 */
export function createInquiriesService(options: InquiriesServiceOptions): InquiriesService {
  const { store } = options;
  const clock = options.clock ?? systemClock;

  /** The inquiry when the actor may see it. */
  async function visible(actor: InquiryActor, id: string): Promise<InquiryRecord> {
    const organizationId = tenantOf(actor);
    const key = id.trim().toLowerCase();
    if (!GUID.test(key)) throw notFound();
    const record = await store.find(organizationId, key);
    if (!record) throw notFound();
    if (actor.permissions.has(INQUIRIES_READ)) return record;
    const submitter = submitterOf(actor);
    if (submitter === null || record.submitterId !== submitter) throw notFound();
    return record;
  }

  return {
    async submit(actor, input, context) {
      const organizationId = tenantOf(actor);
      requirePermission(actor, INQUIRIES_WRITE);
      const data = InquiryInput.parse(input);
      const record: InquiryRecord = {
        id: newId(),
        organizationId,
        ...data,
        submitterId: submitterOf(actor),
        submitterIp: normalizeIp(context.ip),
        status: 'New',
        createdAt: clock.now().toISOString(),
        updatedAt: null,
      };
      await store.transaction(async (tx) => {
        await tx.insert(record);
        await tx.publish(toIntegrationEvents([{ type: 'InquirySubmitted', inquiry: record }]));
      });
      return toInquiryResponse(record);
    },

    async list(actor, filter = {}) {
      const organizationId = tenantOf(actor);
      requirePermission(actor, INQUIRIES_READ);
      const rows = await store.list(organizationId, filter.status ? { status: filter.status } : {});
      return rows.map(toInquiryResponse);
    },

    async listSubmitted(actor) {
      const organizationId = tenantOf(actor);
      const submitter = submitterOf(actor);
      if (submitter === null) return [];
      return (await store.list(organizationId, { submitterId: submitter })).map(toInquiryResponse);
    },

    async get(actor, id) {
      return toInquiryResponse(await visible(actor, id));
    },

    async changeStatus(actor, id, newStatus) {
      requirePermission(actor, INQUIRIES_WRITE);
      const current = await visible(actor, id);
      if (!canTransition(current.status, newStatus)) throw invalidTransition(current.status, newStatus);
      const updated = await store.transition(
        current.organizationId,
        current.id,
        current.status,
        newStatus,
        clock.now().toISOString(),
      );
      if (updated) return toInquiryResponse(updated);
      // Another request moved (or deleted) it between the read and the update.
      const now = await store.find(current.organizationId, current.id);
      if (!now) throw notFound();
      throw invalidTransition(now.status, newStatus);
    },

    async listComments(actor, id) {
      const inquiry = await visible(actor, id);
      const comments = await store.listComments(inquiry.organizationId, inquiry.id, {
        includeInternal: actor.permissions.has(INQUIRIES_READ),
      });
      return comments.map(toCommentResponse);
    },

    async getComment(actor, id, commentId) {
      const inquiry = await visible(actor, id);
      const key = commentId.trim().toLowerCase();
      const comment = GUID.test(key) ? await store.findComment(inquiry.organizationId, inquiry.id, key) : undefined;
      if (!comment || (comment.isInternal && !actor.permissions.has(INQUIRIES_READ))) {
        throw new ProblemError('Inquiry.CommentNotFound');
      }
      return toCommentResponse(comment);
    },

    async addComment(actor, id, input) {
      requirePermission(actor, INQUIRIES_WRITE);
      const data = CommentInput.parse(input);
      if (data.isInternal && !actor.permissions.has(INQUIRIES_READ)) {
        throw new ProblemError('Auth.Forbidden', `Internal comments need the ${INQUIRIES_READ} permission.`);
      }
      const inquiry = await visible(actor, id);
      const authorName = (actor.name?.trim() || actor.subject).slice(0, INQUIRY_LIMITS.authorName);
      const comment: CommentRecord = {
        id: newId(),
        organizationId: inquiry.organizationId,
        inquiryId: inquiry.id,
        authorId: actor.userId ?? actor.subject,
        authorName,
        content: data.content,
        isInternal: data.isInternal,
        createdAt: clock.now().toISOString(),
      };
      if ((await store.insertComment(comment)) === 'inquiry-missing') throw notFound();
      return { id: comment.id };
    },
  };
}
