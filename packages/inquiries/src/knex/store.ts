import type { EventOutbox } from '@idt/core';
import { knexUnitOfWork, toIso, toIsoOrNull } from '@idt/core/knex';
import type { Knex } from 'knex';
import type { CommentRecord, InquiryRecord } from '../records.js';
import { parseInquiryStatus } from '../status.js';
import type { InquiriesStore, InquiriesWrites } from '../store.js';
import { INQUIRIES_TABLE, INQUIRY_COMMENTS_TABLE } from './migrations.js';

/** Options of {@link createKnexInquiriesStore}. */
export interface KnexInquiriesStoreOptions {
  readonly db: Knex;
  /** Writes the integration events the service publishes, in the transaction that stores the change. */
  readonly outbox: EventOutbox;
}

type Row = Record<string, unknown>;

function inquiryFromRow(row: Row): InquiryRecord {
  const status = parseInquiryStatus(row.status);
  if (!status) throw new Error(`Inquiry ${String(row.id)} has an unknown status ${String(row.status)}`);
  return {
    id: String(row.id),
    organizationId: String(row.organization_id),
    name: String(row.name),
    email: String(row.email),
    phone: String(row.phone),
    company: row.company === null || row.company === undefined ? null : String(row.company),
    submitterId: row.submitter_id === null || row.submitter_id === undefined ? null : String(row.submitter_id),
    submitterIp: row.submitter_ip === null || row.submitter_ip === undefined ? null : String(row.submitter_ip),
    projectType: String(row.project_type),
    budgetRange: String(row.budget_range),
    timeline: String(row.timeline),
    message: String(row.message),
    status,
    createdAt: toIso(row.created_at),
    updatedAt: toIsoOrNull(row.updated_at),
  };
}

function commentFromRow(row: Row): CommentRecord {
  return {
    id: String(row.id),
    organizationId: String(row.organization_id),
    inquiryId: String(row.inquiry_id),
    authorId: String(row.author_id),
    authorName: String(row.author_name),
    content: String(row.content),
    isInternal: row.is_internal === true || row.is_internal === 1,
    createdAt: toIso(row.created_at),
  };
}

/** The {@link InquiriesWrites} primitives over one transaction. */
function inquiriesWrites(trx: Knex.Transaction): InquiriesWrites {
  return {
    async insert(inquiry) {
      await trx(INQUIRIES_TABLE).insert({
        id: inquiry.id,
        organization_id: inquiry.organizationId,
        name: inquiry.name,
        email: inquiry.email,
        phone: inquiry.phone,
        company: inquiry.company,
        submitter_id: inquiry.submitterId,
        submitter_ip: inquiry.submitterIp,
        project_type: inquiry.projectType,
        budget_range: inquiry.budgetRange,
        timeline: inquiry.timeline,
        message: inquiry.message,
        status: inquiry.status,
        created_at: inquiry.createdAt,
        updated_at: inquiry.updatedAt,
      });
    },
  };
}

/**
 * The knex {@link InquiriesStore}. Every statement filters by organization;
 * the inquiries service publishes the events in the store's transactions.
 *
 * @example
 * const store = createKnexInquiriesStore({ db, outbox: bus });
 */
export function createKnexInquiriesStore(options: KnexInquiriesStoreOptions): InquiriesStore {
  const { db } = options;

  return {
    ...knexUnitOfWork(options, inquiriesWrites),

    async find(organizationId, id) {
      const row = await db(INQUIRIES_TABLE).where({ id, organization_id: organizationId }).first();
      return row ? inquiryFromRow(row) : undefined;
    },

    async list(organizationId, filter) {
      const query = db(INQUIRIES_TABLE).where({ organization_id: organizationId });
      if (filter.status) query.where({ status: filter.status });
      if (filter.submitterId !== undefined) query.where({ submitter_id: filter.submitterId });
      const rows = await query.orderBy([
        { column: 'created_at', order: 'desc' },
        { column: 'id', order: 'desc' },
      ]);
      return rows.map(inquiryFromRow);
    },

    async transition(organizationId, id, from, to, at) {
      const rows: Row[] = await db(INQUIRIES_TABLE)
        .where({ id, organization_id: organizationId, status: from })
        .update({ status: to, updated_at: at })
        .returning('*');
      const row = rows[0];
      return row ? inquiryFromRow(row) : undefined;
    },

    async insertComment(comment) {
      return db.transaction(async (trx) => {
        // Taking the inquiry row first keeps a concurrent delete from slipping in between.
        const present = await trx(INQUIRIES_TABLE)
          .where({ id: comment.inquiryId, organization_id: comment.organizationId })
          .update({ id: trx.ref('id') });
        if (present === 0) return 'inquiry-missing';
        await trx(INQUIRY_COMMENTS_TABLE).insert({
          id: comment.id,
          organization_id: comment.organizationId,
          inquiry_id: comment.inquiryId,
          author_id: comment.authorId,
          author_name: comment.authorName,
          content: comment.content,
          is_internal: comment.isInternal,
          created_at: comment.createdAt,
        });
        return 'created';
      });
    },

    async findComment(organizationId, inquiryId, commentId) {
      const row = await db(INQUIRY_COMMENTS_TABLE)
        .where({ id: commentId, inquiry_id: inquiryId, organization_id: organizationId })
        .first();
      return row ? commentFromRow(row) : undefined;
    },

    async listComments(organizationId, inquiryId, { includeInternal }) {
      const query = db(INQUIRY_COMMENTS_TABLE).where({ organization_id: organizationId, inquiry_id: inquiryId });
      if (!includeInternal) query.where({ is_internal: false });
      const rows = await query.orderBy([
        { column: 'created_at', order: 'asc' },
        { column: 'id', order: 'asc' },
      ]);
      return rows.map(commentFromRow);
    },
  };
}
