import type { Clock } from '@idt/core';
import { coreMigrations, createWindowCounter, type WindowCounter } from '@idt/core/knex';
import { createTestDatabase } from '@idt/testing';
import { onTestFinished } from 'vitest';

/**
 * The real fixed-window counter over a throwaway SQLite file, read by `clock`,
 * for the policy unit tests; deleted when the calling test finishes.
 */
export async function testWindowCounter(clock: Clock): Promise<WindowCounter> {
  const database = await createTestDatabase('sqlite', [coreMigrations]);
  onTestFinished(() => database.destroy());
  return createWindowCounter({ db: database.db, clock });
}
