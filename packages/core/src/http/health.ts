import { ProblemError } from '@idt/problem';
import { z } from 'zod';
import { json } from './responses.js';
import { defineRoute, type Route } from './route.js';

/** A named readiness check; throws or rejects when the dependency is down. */
export interface ReadinessCheck {
  readonly name: string;
  check(): Promise<void>;
}

const HealthReport = z.object({
  status: z.enum(['Healthy', 'Unhealthy']),
  checks: z.record(z.string(), z.enum(['Healthy', 'Unhealthy'])).optional(),
});

/** Options of {@link createHealthRoutes}. */
export interface HealthRoutesOptions {
  /** How long a readiness check may take before it counts as down; 1500 ms by default. */
  readonly timeoutMs?: number;
}

/** Runs a check, failing it when it has not settled within `timeoutMs` (it is left to finish, its outcome ignored). */
async function withinTime(check: ReadinessCheck, timeoutMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    // Real time, not the service clock: this bounds real I/O (a pool waiting for a connection).
    timer = setTimeout(() => reject(new Error(`${check.name} did not answer within ${timeoutMs} ms`)), timeoutMs);
    timer.unref();
  });
  try {
    await Promise.race([check.check(), timedOut]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * `GET /health` (the process is up, answered without I/O, so it stays 200
 * during an outage) and `GET /health/ready` (every readiness check passes,
 * e.g. the database answers, each within a short timeout). Neither is rate
 * limited.
 */
export function createHealthRoutes(checks: readonly ReadinessCheck[], options: HealthRoutesOptions = {}): Route[] {
  const timeoutMs = options.timeoutMs ?? 1500;
  return [
    defineRoute({
      method: 'GET',
      path: '/health',
      operationId: 'getHealth',
      summary: 'Liveness: the process is up',
      tags: ['Health'],
      auth: 'anonymous',
      ratePolicy: false,
      responses: { 200: { description: 'The process is up', schema: HealthReport } },
      handler: () => json({ status: 'Healthy' }, { headers: { 'cache-control': 'no-store' } }),
    }),
    defineRoute({
      method: 'GET',
      path: '/health/ready',
      operationId: 'getReadiness',
      summary: 'Readiness: every dependency (the database) answers',
      tags: ['Health'],
      auth: 'anonymous',
      ratePolicy: false,
      responses: {
        200: { description: 'Ready to serve', schema: HealthReport },
        503: { description: 'A dependency is down (`Health.Unavailable`)' },
      },
      handler: async () => {
        const results: Record<string, 'Healthy' | 'Unhealthy'> = {};
        await Promise.all(
          checks.map(async (check) => {
            try {
              await withinTime(check, timeoutMs);
              results[check.name] = 'Healthy';
            } catch {
              results[check.name] = 'Unhealthy';
            }
          }),
        );
        if (Object.values(results).includes('Unhealthy')) {
          throw new ProblemError('Health.Unavailable', undefined, { headers: { 'retry-after': '5' } });
        }
        return json({ status: 'Healthy', checks: results }, { headers: { 'cache-control': 'no-store' } });
      },
    }),
  ];
}
