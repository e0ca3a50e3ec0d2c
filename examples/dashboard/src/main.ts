/**
 * Runs the example dashboard on the configuration an `idt register-client
 * --env-out dashboard.env` (or `idt demo`) wrote:
 *
 *   node --env-file=data/demo/dashboard.env --import tsx src/main.ts
 *
 * `PORT` (3000) and `HOST` (127.0.0.1) choose where it listens; the redirect
 * URI registered for the client must point at it (`/bff/callback`).
 */
import { startDashboard } from './index.js';

const dashboard = await startDashboard({ env: process.env }, Number(process.env.PORT ?? 3000), process.env.HOST ?? '127.0.0.1');
console.log(`Dashboard on ${dashboard.url} (provider ${dashboard.bff.config.issuer})`);
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => void dashboard.close().then(() => process.exit(0)));
}
