import type { IdtModule } from '@idt/core';
import { inquiriesMigrations } from './knex/migrations.js';
import { InquiriesCodes } from './problems.js';
import type { InquiriesService } from './service.js';

/** The services of the inquiries module (`idt.services.inquiries`). */
export interface InquiriesServices {
  readonly service: InquiriesService;
}

/**
 * The inquiries module: contact requests of an organization's members with
 * a status workflow and comments, under `/v1/inquiries`. Requires the
 * identity module.
 *
 * @example
 * const idt = await createIdt({ database, modules: [identity(), oidc(), inquiries()] });
 */
export function inquiries(): IdtModule<'inquiries', InquiriesServices> {
  return {
    id: 'inquiries',
    requires: ['identity'],
    migrations: inquiriesMigrations,
    problemCodes: Object.keys(InquiriesCodes),
    async setup(ctx) {
      const { createKnexInquiries } = await import('./knex/module.js');
      const module = createKnexInquiries({ db: ctx.db, outbox: ctx.events, clock: ctx.clock, logger: ctx.logger });
      return {
        services: { service: module.service },
        routes: module.routes,
        events: module.events,
        handlers: module.handlers,
        jobs: module.jobs,
      };
    },
  };
}
