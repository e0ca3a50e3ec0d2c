import { defineEvent, type PendingEvent } from '@idt/core';
import { z } from 'zod';
import type { InquiryRecord } from './records.js';

/** The contracts namespace of the inquiries module's integration events (SPEC 6). */
export const INQUIRY_EVENTS_NAMESPACE = 'Inquiries.Events';

/**
 * An inquiry was submitted (`POST /v1/inquiries`). The integration event the
 * inquiry's own domain event, {@link InquirySubmitted}, is bridged to; it is
 * written to the outbox in the transaction that stores the inquiry.
 * Contracts namespace `Inquiries.Events`.
 */
export const InquirySubmittedEvent = defineEvent({
  type: 'InquirySubmittedEvent',
  module: 'inquiries',
  description: `An inquiry was submitted (contracts namespace \`${INQUIRY_EVENTS_NAMESPACE}\`). Consumers notify staff or a CRM.`,
  schema: z.object({
    inquiryId: z.string().min(1),
    organizationId: z.string().min(1),
    submitterId: z.string().min(1).nullable().describe('The submitting user; null for a service account.'),
    name: z.string(),
    email: z.string(),
    projectType: z.string(),
    submittedAt: z.string().describe('ISO 8601 UTC'),
  }),
});

/** The payload of {@link InquirySubmittedEvent}. */
export type InquirySubmittedPayload = z.output<typeof InquirySubmittedEvent.schema>;

/** Every integration event of the inquiries module, for the catalog. */
export const inquiryEvents = [InquirySubmittedEvent] as const;

/** The domain event the service raises when an inquiry is created. */
export interface InquirySubmitted {
  readonly type: 'InquirySubmitted';
  readonly inquiry: InquiryRecord;
}

/** Domain events of the inquiries module (raised by the service, which publishes their integration events). */
export type InquiryDomainEvent = InquirySubmitted;

/**
 * Bridges domain events to the integration events the outbox carries. The
 * service publishes them in the transaction that persists the change.
 *
 * @example
 * await store.transaction(async (tx) => {
 *   await tx.insert(inquiry);
 *   await tx.publish(toIntegrationEvents([{ type: 'InquirySubmitted', inquiry }]));
 * });
 */
export function toIntegrationEvents(events: readonly InquiryDomainEvent[]): PendingEvent[] {
  return events.map(({ inquiry }) => {
    const payload: InquirySubmittedPayload = {
      inquiryId: inquiry.id,
      organizationId: inquiry.organizationId,
      submitterId: inquiry.submitterId,
      name: inquiry.name,
      email: inquiry.email,
      projectType: inquiry.projectType,
      submittedAt: inquiry.createdAt,
    };
    return { event: InquirySubmittedEvent, payload };
  });
}
