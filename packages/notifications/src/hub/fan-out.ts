import { randomBytes } from 'node:crypto';
import type { Logger } from '@idt/core';
import { ALL_KEYS, type CacheInvalidator } from '@idt/core/knex';
import type { RealtimeEnvelope } from './types.js';

/** The broadcast namespace on the cache invalidation channel (Postgres NOTIFY carries at most 8000 bytes). */
const CHANNEL = 'notifications.realtime';
const MAX_BROADCAST_BYTES = 7_500;

/**
 * A message to every hub instance, `m` its unique id:
 * - `n`: notification `id` of user `u` (in organization `o`) was created;
 * - `u`: an envelope for user `u` (in organization `o`);
 * - `t`: an envelope for organization `o`;
 * - `end`: session `s` ended (`t` says how) at `at`;
 * - `close`: close the connections of user `u` (in organization `o`) for reason `r`, allowing reconnect with `rc`.
 */
export type Broadcast =
  | { m: string; op: 'n'; id: string; u: string; o: string | null }
  | { m: string; op: 'u'; u: string; o?: string; e: RealtimeEnvelope }
  | { m: string; op: 't'; o: string; e: RealtimeEnvelope }
  | { m: string; op: 'end'; s: string; t: 'SessionEnded' | 'SessionEvicted'; at: string }
  | { m: string; op: 'close'; u: string; o?: string; r: string; rc?: boolean };

/** A {@link Broadcast} before it is given its id. */
export type BroadcastBody = Broadcast extends infer B ? (B extends Broadcast ? Omit<B, 'm'> : never) : never;

/** The hub's side of the channel between instances. */
export interface FanOut {
  /**
   * Sends a message to every instance, this one included.
   *
   * @throws RangeError when it takes more than 7,500 bytes as JSON.
   */
  broadcast(body: BroadcastBody): Promise<void>;
  /** Forgets the ids of messages handled before `at`. */
  sweep(at: number): void;
  /** Stops listening. */
  close(): void;
}

/**
 * Creates the fan-out over the cache invalidation channel (Postgres
 * LISTEN/NOTIFY; within the process on SQLite): every message is handed to
 * `receive` once per instance, however often the channel delivers it.
 */
export function createFanOut(options: {
  readonly channel: CacheInvalidator;
  readonly logger: Logger;
  /** How long a message id is remembered. */
  readonly rememberMs: number;
  now(): number;
  receive(message: Broadcast): Promise<void>;
}): FanOut {
  const { channel, logger, now } = options;
  // Broadcasts already handled.
  const seen = new Map<string, number>();

  const unsubscribe = channel.subscribe(CHANNEL, (key) => {
    if (key === ALL_KEYS) return; // a reconnect of the listener: nothing to replay
    let message: Broadcast;
    try {
      message = JSON.parse(key) as Broadcast;
    } catch {
      return; // cut short in another process's SQLite table: this hub serves its own process there
    }
    if (typeof message?.m !== 'string' || seen.has(message.m)) return;
    seen.set(message.m, now() + options.rememberMs);
    options.receive(message).catch((error: unknown) => logger.warn('realtime delivery failed', { error, op: message.op }));
  });

  return {
    async broadcast(body) {
      const key = JSON.stringify({ m: randomBytes(9).toString('base64url'), ...body });
      if (Buffer.byteLength(key) > MAX_BROADCAST_BYTES) {
        throw new RangeError(`A realtime envelope may take at most ${MAX_BROADCAST_BYTES} bytes as JSON`);
      }
      await channel.invalidate(CHANNEL, key);
    },
    sweep(at) {
      for (const [id, until] of seen) if (until <= at) seen.delete(id);
    },
    close: unsubscribe,
  };
}
