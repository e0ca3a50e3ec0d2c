/** An event type webhook endpoints can subscribe to. */
export interface WebhookEventType {
  /** The dotted, lowercase name (`inquiry.submitted`). */
  readonly type: string;
  readonly description: string;
  /** The integration event it is made from (`InquirySubmittedEvent`); absent for `webhook.test`. */
  readonly source?: string;
}

/** The message type of `POST /v1/webhooks/endpoints/{id}/test`. */
export const WEBHOOK_TEST_TYPE = 'webhook.test';

/**
 * Every audit record as a message (`@idt/core`'s `AuditEventRecordedEvent`).
 * Delivered only to endpoints that name it: an endpoint subscribed to every
 * type (an empty list) does not get the whole audit trail unasked.
 */
export const WEBHOOK_AUDIT_TYPE = 'audit.event';

/**
 * The integration events webhooks carry, by dotted name. A type is offered
 * only when the module that publishes its source event is composed.
 */
export const WEBHOOK_EVENT_TYPES: readonly WebhookEventType[] = Object.freeze([
  { type: 'announcement.published', source: 'AnnouncementPublishedEvent', description: 'An announcement was published.' },
  {
    type: WEBHOOK_AUDIT_TYPE,
    source: 'AuditEventRecordedEvent',
    description: 'An audit record was written (the record without its hashes). Only to endpoints that name this type.',
  },
  { type: 'changelog.published', source: 'ChangelogPublishedEvent', description: 'A changelog entry was published.' },
  { type: 'inquiry.submitted', source: 'InquirySubmittedEvent', description: 'An inquiry was submitted.' },
  { type: 'organization.created', source: 'OrganizationCreatedEvent', description: 'An organization was created.' },
  { type: 'organization.member_joined', source: 'MemberJoinedEvent', description: 'A user joined an organization.' },
  { type: 'user.email_changed', source: 'UserEmailChangedEvent', description: 'A user’s e-mail address changed.' },
  { type: 'user.registered', source: 'UserRegisteredEvent', description: 'A user registered.' },
  { type: 'user.session_evicted', source: 'UserSessionEvictedEvent', description: 'A user’s session was evicted.' },
  { type: WEBHOOK_TEST_TYPE, description: 'A test message sent from the API.' },
]);
