import { defineEvent, type TransactionEffects, type UnitOfWork } from '@idt/core';
import {
  type CacheEviction,
  type CacheInvalidator,
  coreMigrations,
  createCacheInvalidator,
  createEventBus,
} from '@idt/core/knex';
import { identityMigrations } from '@idt/identity/knex';
import { createTestDatabase, type TestDatabase, testDialects } from '@idt/testing';
import type { Knex } from 'knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { oidcMigrations } from '../../src/knex.js';

/**
 * What a contract suite of `@idt/oidc` runs against: a throwaway database of
 * one engine with the core, identity and oidc migrations, a real outbox, and
 * a started cache invalidator that also records the evictions of the
 * transactions that committed.
 */
export interface ContractWorld {
  readonly dialect: TestDatabase['dialect'];
  readonly db: Knex;
  readonly outbox: ReturnType<typeof createEventBus>;
  readonly invalidator: CacheInvalidator;
  /** The evictions of the transactions that committed (and those made outside one), in order. */
  readonly evicted: CacheEviction[];
  /** The payloads of the outbox events of `type`, oldest first. */
  events(type: string): Promise<Array<Record<string, unknown>>>;
}

/**
 * The started invalidator of the world, whose evictions are also recorded
 * once their transaction commits, never when it rolls back.
 */
function recordingInvalidator(real: CacheInvalidator, evicted: CacheEviction[]): CacheInvalidator {
  const invalidateMany = async (evictions: ReadonlyArray<CacheEviction>, trx?: Knex.Transaction) => {
    await real.invalidateMany(evictions, trx);
    if (!trx) {
      evicted.push(...evictions);
      return;
    }
    trx.executionPromise.then(
      () => evicted.push(...evictions),
      () => undefined,
    );
  };
  return {
    ...real,
    invalidateMany,
    invalidate: (namespace, key, trx) => invalidateMany([{ namespace, key }], trx),
  };
}

/**
 * Declares a store's contract suite once and runs it on every engine of the
 * run (SQLite, and PostgreSQL when the run has a server), each on a fresh
 * database: the way unstorage runs one driver suite against every driver.
 *
 * @example
 * describeStoreContract('consents', (world) => {
 *   it('…', async () => { const store = createKnexConsentStore(world().db); … });
 * });
 */
export function describeStoreContract(name: string, suite: (world: () => ContractWorld) => void): void {
  describe.each(testDialects())(`the ${name} store contract on %s`, (dialect) => {
    let database: TestDatabase | undefined;
    let real: CacheInvalidator | undefined;
    let current: ContractWorld | undefined;
    beforeAll(async () => {
      database = await createTestDatabase(dialect, [coreMigrations, identityMigrations, oidcMigrations]);
      const { db } = database;
      real = createCacheInvalidator({ db });
      await real.start();
      const evicted: CacheEviction[] = [];
      current = {
        dialect,
        db,
        outbox: createEventBus({ db }),
        invalidator: recordingInvalidator(real, evicted),
        evicted,
        async events(type) {
          const rows: Array<{ payload: string | Record<string, unknown> }> = await db('core_outbox_events')
            .where({ type })
            .orderBy(['occurred_at', 'id'])
            .select('payload');
          return rows.map((row) => (typeof row.payload === 'string' ? JSON.parse(row.payload) : row.payload));
        },
      };
    });
    afterAll(async () => {
      await real?.close();
      await database?.destroy();
    });
    suite(() => {
      if (!current) throw new Error('The contract world is set up in beforeAll');
      return current;
    });
  });
}

/** An event only the contract suites publish, so they count their own. */
export const ContractProbeEvent = defineEvent({
  type: 'OidcContractProbeEvent',
  module: 'oidc',
  description: 'Published by the store contract suites of @idt/oidc to observe a transaction.',
  schema: z.object({ probe: z.string() }),
});

/**
 * The unit-of-work contract every store with a `transaction` shares: what
 * `write` does through the store's primitives, the events published and the
 * evictions made in the same transaction commit together, and roll back
 * together when the work throws; the primitives alone publish nothing.
 * `written(probe)` tells whether `write(tx, probe)`'s change is in the database.
 */
export function itRunsOneUnitOfWork<Primitives, Prepared>(
  world: () => ContractWorld,
  store: () => UnitOfWork<Primitives>,
  options: {
    /** Seeds what `write` needs, before its transaction (on SQLite a seed inside would wait for the transaction's connection). */
    readonly prepare: (probe: string) => Promise<Prepared>;
    readonly write: (tx: Primitives & TransactionEffects, prepared: Prepared) => Promise<unknown>;
    readonly written: (probe: string) => Promise<boolean>;
  },
): void {
  const { prepare, write, written } = options;
  const outboxRows = () => world().db('core_outbox_events').count({ count: '*' }).first();

  it('commits its primitives, events and evictions together, and rolls all of them back when the work throws', async () => {
    const { events, evicted } = world();
    const probes = async (probe: string) => (await events(ContractProbeEvent.type)).filter((payload) => payload.probe === probe);
    const work = async (tx: Primitives & TransactionEffects, probe: string, prepared: Prepared) => {
      await write(tx, prepared);
      await tx.publish([{ event: ContractProbeEvent, payload: { probe } }]);
      await tx.evict([{ namespace: 'oidc.contract', key: probe }]);
    };

    const refused = `refused-${Math.random()}`;
    const preparedForRefused = await prepare(refused);
    await expect(
      store().transaction(async (tx) => {
        await work(tx, refused, preparedForRefused);
        throw new Error('refused');
      }),
    ).rejects.toThrow('refused');
    expect(await written(refused)).toBe(false);
    expect(await probes(refused)).toEqual([]);

    const kept = `kept-${Math.random()}`;
    const preparedForKept = await prepare(kept);
    await store().transaction((tx) => work(tx, kept, preparedForKept));
    expect(await written(kept)).toBe(true);
    expect(await probes(kept)).toHaveLength(1);
    // Evictions are made once the transaction commits: the refused one never was.
    await expect
      .poll(() => evicted.filter((eviction) => eviction.namespace === 'oidc.contract').map((e) => e.key))
      .toEqual([kept]);
  });

  it('writes no event of its own: only what the caller publishes reaches the outbox', async () => {
    const probe = `silent-${Math.random()}`;
    const prepared = await prepare(probe);
    const before = Number((await outboxRows())?.count);
    await store().transaction((tx) => write(tx, prepared));
    expect(await written(probe)).toBe(true);
    expect(Number((await outboxRows())?.count)).toBe(before);
  });

  it('writes nothing for empty lists of events and evictions', async () => {
    const { db } = world();
    const statementsOf = async (run: () => Promise<unknown>) => {
      let statements = 0;
      const count = () => {
        statements++;
      };
      db.on('query', count);
      try {
        await run();
      } finally {
        db.off('query', count);
      }
      return statements;
    };
    const empty = await statementsOf(() => db.transaction(async () => undefined));
    const effects = await statementsOf(() =>
      store().transaction(async (tx) => {
        await tx.publish([]);
        await tx.evict([]);
      }),
    );
    expect(effects).toBe(empty);
  });
}

/** Settles concurrent calls and counts those that resolved to `true` (the winners of a single-use primitive). */
export async function winners(calls: ReadonlyArray<Promise<boolean>>): Promise<number> {
  const results = await Promise.allSettled(calls);
  return results.filter((result) => result.status === 'fulfilled' && result.value).length;
}

/** A `Date` `ms` milliseconds after `start` (an ISO 8601 instant or a `Date`). */
export function after(start: string | Date, ms: number): Date {
  return new Date(new Date(start).getTime() + ms);
}
