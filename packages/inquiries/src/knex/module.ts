import type { Clock, EventDefinition, EventHandlerDefinition, EventOutbox, Logger, Route } from '@idt/core';
import type { Knex } from 'knex';
import { inquiryEvents } from '../events.js';
import { createInquiryRoutes } from '../http/routes.js';
import { createInquiriesService, type InquiriesService } from '../service.js';
import { createKnexInquiriesStore } from './store.js';

/** Options of {@link createKnexInquiries}. */
export interface KnexInquiriesOptions {
  readonly db: Knex;
  /** The event bus's outbox: `InquirySubmittedEvent` is written in the inquiry's transaction. */
  readonly outbox: EventOutbox;
  readonly clock?: Clock;
  readonly logger?: Logger;
}

/** The inquiries module on knex: the service, its routes, events, handlers and jobs. */
export interface KnexInquiries {
  readonly service: InquiriesService;
  readonly routes: readonly Route[];
  /** Events the module publishes (register them for the catalog). */
  readonly events: readonly EventDefinition<any>[];
  /** Handlers to subscribe on the bus (none yet: consumers live in other modules). */
  readonly handlers: readonly EventHandlerDefinition<any>[];
  /** Periodic work for the host to run (none yet). */
  readonly jobs: ReadonlyArray<{ readonly name: string; readonly intervalMs: number; run(): Promise<unknown> }>;
}

/**
 * Wires the inquiries module over a knex database (migrations:
 * `inquiriesMigrations`, after `@idt/core` and `@idt/identity`).
 *
 * @example
 * const inquiries = createKnexInquiries({ db, outbox: bus });
 * for (const event of inquiries.events) bus.register(event);
 * routes.push(...inquiries.routes);
 */
export function createKnexInquiries(options: KnexInquiriesOptions): KnexInquiries {
  const store = createKnexInquiriesStore({ db: options.db, outbox: options.outbox });
  const service = createInquiriesService({ store, ...(options.clock ? { clock: options.clock } : {}) });
  return {
    service,
    routes: createInquiryRoutes(service),
    events: [...inquiryEvents],
    handlers: [],
    jobs: [],
  };
}
