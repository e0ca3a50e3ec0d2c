import { defineEvent, type TransactionEffects, type UnitOfWork } from '@idt/core';
import { type CacheEviction, type CacheInvalidator, coreMigrations, createEventBus } from '@idt/core/knex';
import { identityMigrations } from '@idt/identity/knex';
import { createTestDatabase, type TestDatabase, testDialects } from '@idt/testing';
import type { Knex } from 'knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { platformMigrations } from '../../src/knex.js';

/**
 * What a contract suite runs against: a migrated throwaway database of one
 * engine, and the options every knex store of the platform is built from (a
 * real outbox; an invalidator that records the evictions of committed
 * transactions).
 */
export interface ContractWorld {
  readonly dialect: TestDatabase['dialect'];
  readonly db: Knex;
  readonly options: {
    readonly db: Knex;
    readonly outbox: ReturnType<typeof createEventBus>;
    readonly invalidator: Pick<CacheInvalidator, 'invalidateMany'>;
  };
  /** The evictions of the transactions that committed, in order. */
  readonly evicted: CacheEviction[];
  /** The payloads of the outbox events of `type`, oldest first. */
  events(type: string): Promise<Array<Record<string, unknown>>>;
}

/**
 * Evicts once the transaction commits, never when it rolls back, as core's
 * invalidator does; records what it evicted.
 */
function recordingInvalidator(evicted: CacheEviction[]): ContractWorld['options']['invalidator'] {
  return {
    async invalidateMany(evictions, trx) {
      if (!trx) {
        evicted.push(...evictions);
        return;
      }
      trx.executionPromise.then(
        () => evicted.push(...evictions),
        () => undefined,
      );
    },
  };
}

/**
 * Declares a store's contract suite once and runs it on every engine of the
 * run (SQLite, and PostgreSQL when the run has a server), each on a fresh
 * database with the core, identity and platform migrations: the way
 * unstorage runs one driver suite against every driver.
 *
 * @example
 * describeStoreContract('flags', (world) => {
 *   it('…', async () => { const store = createKnexFlagsStore(world().options); … });
 * });
 */
export function describeStoreContract(name: string, suite: (world: () => ContractWorld) => void): void {
  describe.each(testDialects())(`the ${name} store contract on %s`, (dialect) => {
    let database: TestDatabase | undefined;
    let current: ContractWorld | undefined;
    beforeAll(async () => {
      database = await createTestDatabase(dialect, [coreMigrations, identityMigrations, platformMigrations]);
      const { db } = database;
      const evicted: CacheEviction[] = [];
      current = {
        dialect,
        db,
        options: { db, outbox: createEventBus({ db }), invalidator: recordingInvalidator(evicted) },
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
  type: 'PlatformContractProbeEvent',
  module: 'platform',
  description: 'Published by the store contract suites to observe a transaction.',
  schema: z.object({ probe: z.string() }),
});

/** Counts the statements `run` sends to `db`. */
export async function statementsOf(db: Knex, run: () => Promise<unknown>): Promise<number> {
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
}

/**
 * The unit-of-work contract every store shares: what `write` does through the
 * store's primitives, the events published and the evictions made in the same
 * transaction commit together, and roll back together when the work throws.
 * `written(probe)` tells whether `write(tx, probe)`'s change is in the database.
 */
export function itRunsOneUnitOfWork<Primitives, Prepared>(
  world: () => ContractWorld,
  store: () => UnitOfWork<Primitives>,
  options: {
    /** Seeds what `write` needs, before its transaction (on SQLite a seed inside would wait for the transaction's connection). */
    readonly prepare: () => Promise<Prepared>;
    readonly write: (tx: Primitives & TransactionEffects, probe: string, prepared: Prepared) => Promise<unknown>;
    readonly written: (probe: string, prepared: Prepared) => Promise<boolean>;
  },
): void {
  const { prepare, write, written } = options;
  it('commits its primitives, events and evictions together, and rolls all of them back when the work throws', async () => {
    const { events, evicted } = world();
    const probes = async (probe: string) => (await events(ContractProbeEvent.type)).filter((payload) => payload.probe === probe);
    const work = async (tx: Primitives & TransactionEffects, probe: string, prepared: Prepared) => {
      await write(tx, probe, prepared);
      await tx.publish([{ event: ContractProbeEvent, payload: { probe } }]);
      await tx.evict([{ namespace: 'platform.contract', key: probe }]);
    };

    const refused = `refused-${Math.random().toString(36).slice(2, 10)}`;
    const preparedForRefused = await prepare();
    await expect(
      store().transaction(async (tx) => {
        await work(tx, refused, preparedForRefused);
        throw new Error('refused');
      }),
    ).rejects.toThrow('refused');
    expect(await written(refused, preparedForRefused)).toBe(false);
    expect(await probes(refused)).toEqual([]);

    const kept = `kept-${Math.random().toString(36).slice(2, 10)}`;
    const preparedForKept = await prepare();
    // Inside the transaction nothing is in the outbox yet for anyone else to see.
    await store().transaction(async (tx) => {
      await work(tx, kept, preparedForKept);
      if (world().dialect === 'postgres') expect(await probes(kept)).toEqual([]);
    });
    expect(await written(kept, preparedForKept)).toBe(true);
    expect(await probes(kept)).toHaveLength(1);
    // Evictions are made once the transaction commits: the refused one never was.
    await expect
      .poll(() => evicted.filter((eviction) => eviction.namespace === 'platform.contract').map((e) => e.key))
      .toEqual([kept]);
  });

  it('writes nothing for empty lists of events and evictions', async () => {
    const { db } = world();
    const empty = await statementsOf(db, () => db.transaction(async () => undefined));
    const effects = await statementsOf(db, () =>
      store().transaction(async (tx) => {
        await tx.publish([]);
        await tx.evict([]);
      }),
    );
    expect(effects).toBe(empty);
  });
}

/** Settles concurrent calls and counts those whose answer `won` accepts (the winners of a single-use primitive). */
export async function winners<T>(calls: ReadonlyArray<Promise<T>>, won: (value: T) => boolean = Boolean): Promise<number> {
  const results = await Promise.allSettled(calls);
  return results.filter((result) => result.status === 'fulfilled' && won(result.value)).length;
}
