import { ProblemError } from '@idt/problem';
import type { RequestGate } from './app.js';

/** The paths that stay reachable while setup is required (SPEC 3.1). */
export const SETUP_ALLOWLIST: readonly string[] = Object.freeze([
  '/v1/identity/setup',
  '/health',
  '/.well-known',
  '/connect',
  '/openapi',
  '/scalar',
]);

/** Whether a prefix-free path is `base` itself or below it (segment-wise). */
export function isPathUnder(path: string, base: string): boolean {
  return path === base || path.startsWith(`${base}/`);
}

/** Options of {@link createSetupGate}. */
export interface SetupGateOptions {
  /** Whether the service still needs its first administrator. */
  isSetupRequired(): Promise<boolean>;
  /** Paths that stay reachable; {@link SETUP_ALLOWLIST} by default. */
  allowlist?: readonly string[];
  /**
   * How long an answer of "set up" is trusted without asking again, in
   * milliseconds (default 1000); requests in that time pass without waiting.
   */
  cacheMs?: number;
}

/**
 * The setup gate: while setup is required, every path outside the allowlist
 * answers 503 `Setup.Required`.
 */
export function createSetupGate(options: SetupGateOptions): RequestGate {
  const allowlist = options.allowlist ?? SETUP_ALLOWLIST;
  const cacheMs = options.cacheMs ?? 1000;
  let setUpUntil = 0;
  let checking: Promise<void> | undefined;
  const check = async () => {
    if (await options.isSetupRequired()) {
      throw new ProblemError('Setup.Required', 'The service needs its first administrator: POST /v1/identity/setup/admin.');
    }
    setUpUntil = Date.now() + cacheMs;
  };
  return ({ path }) => {
    if (setUpUntil > Date.now()) return;
    if (allowlist.some((base) => isPathUnder(path, base))) return;
    // Concurrent requests share one check.
    if (!checking) {
      const pending = check();
      checking = pending;
      const done = () => {
        if (checking === pending) checking = undefined;
      };
      pending.then(done, done);
    }
    return checking;
  };
}
