import type { Knex } from 'knex';
import type { z } from 'zod';
import type { Clock } from '../clock.js';
import { OUTBOX_DELIVERIES_TABLE, OUTBOX_EVENTS_TABLE } from '../db/migrations/0001-outbox.js';
import { type ListStatement, listStatement, runListStatement, runStatement, type StatementBinding } from '../db/statements.js';
import { newId } from '../ids.js';
import type { ClaimedDelivery, EventRow } from './outbox-rows.js';
import type { EventRegistry } from './registry.js';
import type { PendingEvent } from './types.js';

/** Thrown by {@link EventOutbox.write} when a payload does not match its event's schema. */
export class EventPayloadError extends Error {
  /** The event type whose payload was refused. */
  readonly eventType: string;
  /** The schema's findings. */
  readonly issues: readonly z.core.$ZodIssue[];
  constructor(eventType: string, error: z.ZodError) {
    const summary = error.issues
      .map((issue) => `${issue.path.length > 0 ? issue.path.join('.') : '(root)'}: ${issue.message}`)
      .join('; ');
    super(`Invalid payload for event ${eventType}: ${summary}`, { cause: error });
    this.name = 'EventPayloadError';
    this.eventType = eventType;
    this.issues = error.issues;
  }
}

const EVENT_COLUMNS = ['id', 'type', 'payload', 'occurred_at'] as const;
const DELIVERY_COLUMNS = [
  'id',
  'event_id',
  'handler',
  'status',
  'attempts',
  'next_attempt_at',
  'claimed_by',
  'claimed_until',
] as const;

/** The multi-row insert of `columns` into `table`, written once per row count (see `listStatement`). */
function insertStatement(table: string, columns: readonly string[]): ListStatement {
  return listStatement((rows) => `insert into ${table} (${columns.join(', ')}) values ${rows}`, {
    kind: 'values',
    item: `(${columns.map(() => '?').join(', ')})`,
  });
}
const INSERT_EVENTS = insertStatement(OUTBOX_EVENTS_TABLE, EVENT_COLUMNS);
const INSERT_DELIVERIES = insertStatement(OUTBOX_DELIVERIES_TABLE, DELIVERY_COLUMNS);

/** Most events, and deliveries, that PostgreSQL inserts in one statement (beyond them: a statement per table). */
const MAX_EVENTS_TOGETHER = 4;
const MAX_DELIVERIES_TOGETHER = 16;
const insertTogether = new Map<number, string>();

/**
 * PostgreSQL: the insert of `events` events and `deliveries` deliveries as
 * one statement (a data-modifying `with`: one round trip where two tables
 * took two), written once per pair of counts; `undefined` past
 * {@link MAX_EVENTS_TOGETHER} or {@link MAX_DELIVERIES_TOGETHER}, or
 * without deliveries. Bindings: every event's columns, then every
 * delivery's. The foreign key of the deliveries is checked at the end of the
 * statement, when the events are there.
 */
function insertTogetherSql(events: number, deliveries: number): string | undefined {
  if (events < 1 || events > MAX_EVENTS_TOGETHER || deliveries < 1 || deliveries > MAX_DELIVERIES_TOGETHER) return undefined;
  const key = events * (MAX_DELIVERIES_TOGETHER + 1) + deliveries;
  let sql = insertTogether.get(key);
  if (sql === undefined) {
    sql = `with written as (${INSERT_EVENTS.sql(events)}) ${INSERT_DELIVERIES.sql(deliveries)}`;
    insertTogether.set(key, sql);
  }
  return sql;
}

/** The bound values of `rows` for an insert of `columns`: each row's, in column order, one row after the other. */
function rowValues<Column extends string>(
  columns: readonly Column[],
  rows: ReadonlyArray<Record<Column, StatementBinding>>,
): StatementBinding[] {
  return rows.flatMap((row) => columns.map((column) => row[column]));
}

/** Inserts `rows` (`columns` of each, in order) with `statement`, written for them by {@link insertStatement}. */
async function insertRows<Column extends string>(
  trx: Knex.Transaction,
  statement: ListStatement,
  columns: readonly Column[],
  rows: ReadonlyArray<Record<Column, StatementBinding>>,
): Promise<void> {
  await runListStatement(trx, statement, [], rowValues(columns, rows));
}

/** Options of {@link createOutboxWriter}. */
export interface OutboxWriterOptions {
  readonly registry: EventRegistry;
  readonly clock: Clock;
  /** Whom deliveries written claimed are claimed by. */
  readonly instanceId: string;
  readonly leaseMs: number;
  /** PostgreSQL writes a few events and their deliveries in one statement. */
  readonly postgres: boolean;
}

/** What one {@link OutboxWriter.write} inserted. */
export interface WrittenOutboxRows {
  readonly events: ReadonlyArray<EventRow & { occurred_at: string }>;
  /** One per event and subscribed handler; claimed by this instance (attempt 1) when written with `claim`. */
  readonly deliveries: readonly ClaimedDelivery[];
}

/** Inserts events, and a delivery per subscribed handler, in the caller's transaction. */
export interface OutboxWriter {
  /**
   * Validates the payloads and inserts the rows. With `claim`, the deliveries
   * are written claimed by this instance, their lease starting now.
   *
   * @throws TypeError when `trx` is not a transaction; Error when it completed.
   * @throws EventPayloadError when a payload does not match its schema (nothing is written).
   */
  write(trx: Knex.Transaction, pending: ReadonlyArray<PendingEvent>, claim: boolean): Promise<WrittenOutboxRows>;
}

/** Creates the writer of one bus's outbox rows. */
export function createOutboxWriter(options: OutboxWriterOptions): OutboxWriter {
  const { registry, clock, instanceId, leaseMs, postgres } = options;
  return {
    async write(trx, pending, claim) {
      if (trx?.isTransaction !== true) {
        throw new TypeError('EventOutbox.write needs the knex transaction of the change that caused the events');
      }
      if (trx.isCompleted()) throw new Error('EventOutbox.write was given a transaction that already completed');
      if (pending.length === 0) return { events: [], deliveries: [] };
      const now = clock.now();
      const occurredAt = now.toISOString();
      const claimedUntil = claim ? new Date(now.getTime() + leaseMs).toISOString() : null;
      const eventRows: Array<EventRow & { occurred_at: string }> = [];
      const deliveryRows: Array<Record<(typeof DELIVERY_COLUMNS)[number], StatementBinding>> = [];
      const deliveries: ClaimedDelivery[] = [];
      for (const { event, payload } of pending) {
        registry.register(event);
        const parsed = event.schema.safeParse(payload);
        if (!parsed.success) throw new EventPayloadError(event.type, parsed.error);
        const id = newId();
        eventRows.push({ id, type: event.type, payload: JSON.stringify(parsed.data), occurred_at: occurredAt });
        for (const handler of registry.subscribersOf(event.type)) {
          const delivery: ClaimedDelivery = { id: newId(), event_id: id, handler, attempts: claim ? 1 : 0 };
          deliveries.push(delivery);
          deliveryRows.push({
            ...delivery,
            status: 'pending',
            next_attempt_at: occurredAt,
            claimed_by: claim ? instanceId : null,
            claimed_until: claimedUntil,
          });
        }
      }
      const together = postgres ? insertTogetherSql(eventRows.length, deliveryRows.length) : undefined;
      if (together) {
        await runStatement(trx, together, [...rowValues(EVENT_COLUMNS, eventRows), ...rowValues(DELIVERY_COLUMNS, deliveryRows)]);
      } else {
        await insertRows(trx, INSERT_EVENTS, EVENT_COLUMNS, eventRows);
        await insertRows(trx, INSERT_DELIVERIES, DELIVERY_COLUMNS, deliveryRows);
      }
      return { events: eventRows, deliveries };
    },
  };
}
