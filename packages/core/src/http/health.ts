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

/**
 * `GET /health` (the process is up) and `GET /health/ready` (every readiness
 * check passes, e.g. the database answers). Neither is rate limited.
 */
export function createHealthRoutes(checks: readonly ReadinessCheck[]): Route[] {
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
              await check.check();
              results[check.name] = 'Healthy';
            } catch {
              results[check.name] = 'Unhealthy';
            }
          }),
        );
        if (Object.values(results).includes('Unhealthy')) {
          throw new ProblemError('Health.Unavailable');
        }
        return json({ status: 'Healthy', checks: results }, { headers: { 'cache-control': 'no-store' } });
      },
    }),
  ];
}
