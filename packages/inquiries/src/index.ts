/**
 * Inquiries for idt (SPEC 4.8): submissions from a contact or project form,
 * their status (New → Reviewed → Contacted → Closed) and comments, owned by
 * an organization. Services, routes, schemas and events are here; the knex
 * store and migrations in `@idt/inquiries/knex`.
 *
 * @packageDocumentation
 */
import './problems.js';

export type { InquiryDomainEvent, InquirySubmitted, InquirySubmittedPayload } from './events.js';
export { INQUIRY_EVENTS_NAMESPACE, InquirySubmittedEvent, inquiryEvents, toIntegrationEvents } from './events.js';
export { createInquiryRoutes } from './http/routes.js';
export type { InquiriesServices } from './module.js';
export { inquiries } from './module.js';
export { InquiriesCodes } from './problems.js';
export type { CommentRecord, InquiryFilter, InquiryRecord } from './records.js';
export {
  ChangeStatusInput,
  CommentCreated,
  CommentInput,
  CommentResponse,
  INQUIRY_LIMITS,
  InquiryInput,
  InquiryListQuery,
  InquiryResponse,
  InquiryStatusName,
} from './schemas.js';
export type { InquiriesService, InquiriesServiceOptions, InquiryActor, SubmissionContext } from './service.js';
export {
  createInquiriesService,
  INQUIRIES_READ,
  INQUIRIES_WRITE,
  submitterOf,
  toInquiryResponse,
} from './service.js';
export type { InquiryStatus } from './status.js';
export { canTransition, INQUIRY_STATUSES, nextStatus, parseInquiryStatus } from './status.js';
export type { InquiriesStore, InquiriesWrites } from './store.js';
