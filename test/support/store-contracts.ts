import { defineEvent, type EventDefinition, type TransactionEffects, type UnitOfWork } from '@idt/core';
import {
  type CacheEviction,
  type CacheInvalidator,
  createCacheInvalidator,
  createEventBus,
  type EventBus,
  type MigrationSet,
} from '@idt/core/knex';
import type { Knex } from 'knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createTestDatabase, type TestDatabase, type TestDialect, testDialects } from './database.js';

/** The invalidator of a contract world and how to stop it once the world is destroyed. */
export interface StoreContractInvalidator<Invalidator> {
  /** What the stores evict through; `undefined` when they keep no cache. */
  readonly invalidator: Invalidator;
  close(): Promise<void>;
}

/** Builds the invalidator of a contract world on its database; what it evicts is pushed to `evicted` once committed. */
export type StoreContractInvalidatorFactory<Invalidator> = (
  db: Knex,
  evicted: CacheEviction[],
) => Promise<StoreContractInvalidator<Invalidator>>;

/** The part of core's invalidator the stores of a recording world evict through. */
export type RecordingInvalidator = Pick<CacheInvalidator, 'invalidate' | 'invalidateMany'>;

/** Records `evictions` once `trx` commits, never when it rolls back; at once without a transaction. */
function record(evicted: CacheEviction[], evictions: ReadonlyArray<CacheEviction>, trx: Knex.Transaction | undefined): void {
  if (!trx) {
    evicted.push(...evictions);
    return;
  }
  trx.executionPromise.then(
    () => evicted.push(...evictions),
    () => undefined,
  );
}

/** No invalidator: for stores that keep no cache (their transactions' `evict` has nothing to call). */
export const withoutInvalidator: StoreContractInvalidatorFactory<undefined> = async () => ({
  invalidator: undefined,
  close: async () => undefined,
});

/**
 * An invalidator that evicts nothing but records what it would evict once the
 * transaction commits, never when it rolls back, as core's invalidator does.
 */
export const recordingInvalidator: StoreContractInvalidatorFactory<RecordingInvalidator> = async (_db, evicted) => {
  const invalidateMany: RecordingInvalidator['invalidateMany'] = async (evictions, trx) => record(evicted, evictions, trx);
  return {
    invalidator: { invalidateMany, invalidate: (namespace, key, trx) => invalidateMany([{ namespace, key }], trx) },
    close: async () => undefined,
  };
};

/**
 * Core's invalidator, started on the world's database, whose evictions are
 * also recorded once their transaction commits; closed with the world.
 */
export const startedInvalidator: StoreContractInvalidatorFactory<CacheInvalidator> = async (db, evicted) => {
  const real = createCacheInvalidator({ db });
  await real.start();
  const invalidateMany: CacheInvalidator['invalidateMany'] = async (evictions, trx) => {
    await real.invalidateMany(evictions, trx);
    record(evicted, evictions, trx);
  };
  return {
    invalidator: { ...real, invalidateMany, invalidate: (namespace, key, trx) => invalidateMany([{ namespace, key }], trx) },
    close: () => real.close(),
  };
};

/** What a package's knex stores are built from in a contract world. */
export interface StoreContractEffects<Invalidator> {
  readonly db: Knex;
  readonly outbox: EventBus;
  /** `undefined` when the world has no invalidator. */
  readonly invalidator: Invalidator;
}

/**
 * What a contract suite runs against: a migrated throwaway database of one
 * engine, a real outbox, the world's invalidator, and the options the
 * package's knex stores are built from.
 */
export interface StoreContractWorld<Invalidator, Options> extends StoreContractEffects<Invalidator> {
  readonly dialect: TestDatabase['dialect'];
  /** The options the package's knex stores are built from (see {@link StoreContractSetup.options}). */
  readonly options: Options;
  /** The evictions of the transactions that committed (and those made outside one), in order; empty without an invalidator. */
  readonly evicted: CacheEviction[];
  /** The payloads of the outbox events of `type`, oldest first. */
  events(type: string): Promise<Array<Record<string, unknown>>>;
}

/** What differs between the contract suites of two packages. */
export interface StoreContractSetup<Invalidator, Options> {
  /** The package's module id: it names the probe event and the namespace of the probe evictions (`<module>.contract`). */
  readonly module: string;
  /** The migrations of a fresh world's database, in dependency order. */
  readonly migrations: readonly MigrationSet[];
  /**
   * {@link withoutInvalidator} (the stores keep no cache, so the unit-of-work
   * checks make no eviction), {@link recordingInvalidator} or {@link startedInvalidator}.
   */
  readonly invalidator: StoreContractInvalidatorFactory<Invalidator>;
  /** Builds the options the package's knex stores take from the world's effects. */
  readonly options: (effects: StoreContractEffects<Invalidator>) => Options;
}

/** The unit-of-work checks of one store: how to write through its primitives and how to tell it was written. */
export interface UnitOfWorkChecks<Primitives, Prepared> {
  /** Seeds what `write` needs, before its transaction (on SQLite a seed inside would wait for the transaction's connection). */
  readonly prepare: (probe: string) => Promise<Prepared>;
  /** Changes the database through the store's primitives, marked by `probe`. */
  readonly write: (tx: Primitives & TransactionEffects, probe: string, prepared: Prepared) => Promise<unknown>;
  /** Whether `write(tx, probe, prepared)`'s change is in the database. */
  readonly written: (probe: string, prepared: Prepared) => Promise<boolean>;
  /** Also checks that `write` alone puts no event in the outbox: only what the caller publishes reaches it. */
  readonly writesNoEventOfItsOwn?: boolean;
}

/** The contract helpers of one package, bound to its {@link StoreContractSetup}. */
export interface StoreContracts<Invalidator, Options> {
  /** An event only the package's contract suites publish, so they count their own. */
  readonly ContractProbeEvent: EventDefinition<{ probe: string }>;
  /**
   * Declares a store's contract suite once and runs it on every engine of the
   * run (SQLite, and PostgreSQL when the run has a server), each on a fresh
   * database with the package's migrations: the way unstorage runs one driver
   * suite against every driver.
   *
   * @example
   * describeStoreContract('sessions', (world) => {
   *   it('…', async () => { const store = createKnexSessionStore(world().options); … });
   * });
   */
  describeStoreContract(name: string, suite: (world: () => StoreContractWorld<Invalidator, Options>) => void): void;
  /**
   * The unit-of-work contract every store with a `transaction` shares: what
   * `write` does through the store's primitives, the events published and
   * (when the world has an invalidator) the evictions made in the same
   * transaction commit together, and roll back together when the work
   * throws; the events reach the outbox only on commit, the evictions are
   * made only after it; empty lists of events and evictions send no statement.
   */
  itRunsOneUnitOfWork<Primitives, Prepared>(
    world: () => StoreContractWorld<Invalidator, Options>,
    store: () => UnitOfWork<Primitives>,
    checks: UnitOfWorkChecks<Primitives, Prepared>,
  ): void;
}

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

/** Settles concurrent calls and counts those whose answer `won` accepts (the winners of a single-use primitive). */
export async function winners<T>(calls: ReadonlyArray<Promise<T>>, won: (value: T) => boolean = Boolean): Promise<number> {
  const results = await Promise.allSettled(calls);
  return results.filter((result) => result.status === 'fulfilled' && won(result.value)).length;
}

/** A probe marker no other run of the same suite repeats. */
const probeOf = (prefix: string) => `${prefix}-${Math.random().toString(36).slice(2, 10)}`;

/**
 * The store contract helpers of one package: its contract suites declare
 * themselves with `describeStoreContract` and check their store's unit of
 * work with `itRunsOneUnitOfWork`, on worlds built from `setup`.
 *
 * @example
 * export const { describeStoreContract, itRunsOneUnitOfWork } = defineStoreContracts({
 *   module: 'identity',
 *   migrations: [coreMigrations, identityMigrations],
 *   invalidator: recordingInvalidator,
 *   options: (effects) => effects,
 * });
 */
export function defineStoreContracts<Invalidator, Options>(
  setup: StoreContractSetup<Invalidator, Options>,
): StoreContracts<Invalidator, Options> {
  const ContractProbeEvent = defineEvent({
    type: `${setup.module.charAt(0).toUpperCase()}${setup.module.slice(1)}ContractProbeEvent`,
    module: setup.module,
    description: `Published by the store contract suites of ${setup.module} to observe a transaction.`,
    schema: z.object({ probe: z.string() }),
  });
  const namespace = `${setup.module}.contract`;
  // Without an invalidator the stores keep no cache: the checks make no eviction.
  const evicts = setup.invalidator !== withoutInvalidator;

  function describeStoreContract(name: string, suite: (world: () => StoreContractWorld<Invalidator, Options>) => void): void {
    describe.each(testDialects())(`the ${name} store contract on %s`, (dialect: TestDialect) => {
      let database: TestDatabase | undefined;
      let invalidator: StoreContractInvalidator<Invalidator> | undefined;
      let current: StoreContractWorld<Invalidator, Options> | undefined;
      beforeAll(async () => {
        database = await createTestDatabase(dialect, setup.migrations);
        const { db } = database;
        const evicted: CacheEviction[] = [];
        invalidator = await setup.invalidator(db, evicted);
        const effects: StoreContractEffects<Invalidator> = {
          db,
          outbox: createEventBus({ db }),
          invalidator: invalidator.invalidator,
        };
        current = {
          ...effects,
          dialect,
          options: setup.options(effects),
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
        await invalidator?.close();
        await database?.destroy();
      });
      suite(() => {
        if (!current) throw new Error('The contract world is set up in beforeAll');
        return current;
      });
    });
  }

  function itRunsOneUnitOfWork<Primitives, Prepared>(
    world: () => StoreContractWorld<Invalidator, Options>,
    store: () => UnitOfWork<Primitives>,
    checks: UnitOfWorkChecks<Primitives, Prepared>,
  ): void {
    const { prepare, write, written } = checks;
    const title = evicts
      ? 'commits its primitives, events and evictions together, and rolls all of them back when the work throws'
      : 'commits its primitives and events together, and rolls both back when the work throws';

    it(title, async () => {
      const { events, evicted } = world();
      const probes = async (probe: string) =>
        (await events(ContractProbeEvent.type)).filter((payload) => payload.probe === probe);
      const work = async (tx: Primitives & TransactionEffects, probe: string, prepared: Prepared) => {
        await write(tx, probe, prepared);
        await tx.publish([{ event: ContractProbeEvent, payload: { probe } }]);
        if (evicts) await tx.evict([{ namespace, key: probe }]);
      };

      const refused = probeOf('refused');
      const preparedForRefused = await prepare(refused);
      await expect(
        store().transaction(async (tx) => {
          await work(tx, refused, preparedForRefused);
          throw new Error('refused');
        }),
      ).rejects.toThrow('refused');
      expect(await written(refused, preparedForRefused)).toBe(false);
      expect(await probes(refused)).toEqual([]);

      const kept = probeOf('kept');
      const preparedForKept = await prepare(kept);
      // Inside the transaction nothing is in the outbox yet for anyone else to see.
      await store().transaction(async (tx) => {
        await work(tx, kept, preparedForKept);
        if (world().dialect === 'postgres') expect(await probes(kept)).toEqual([]);
      });
      expect(await written(kept, preparedForKept)).toBe(true);
      expect(await probes(kept)).toHaveLength(1);
      if (!evicts) return;
      // Evictions are made once the transaction commits: the refused one never was.
      await expect
        .poll(() => evicted.filter((eviction) => eviction.namespace === namespace).map((eviction) => eviction.key))
        .toEqual([kept]);
    });

    if (checks.writesNoEventOfItsOwn) {
      it('writes no event of its own: only what the caller publishes reaches the outbox', async () => {
        const outboxRows = async () => Number((await world().db('core_outbox_events').count({ count: '*' }).first())?.count);
        const probe = probeOf('silent');
        const prepared = await prepare(probe);
        const before = await outboxRows();
        await store().transaction((tx) => write(tx, probe, prepared));
        expect(await written(probe, prepared)).toBe(true);
        expect(await outboxRows()).toBe(before);
      });
    }

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

  return { ContractProbeEvent, describeStoreContract, itRunsOneUnitOfWork };
}
