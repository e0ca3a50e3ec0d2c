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
// The redirect URI's host, not the bound address: the sign-in comes back there, and its cookies live there.
const open = new URL(dashboard.url);
const bound = new URL(dashboard.listening);
const provider = `provider ${dashboard.bff.config.issuer}`;
if (['localhost', '127.0.0.1', '[::1]'].includes(open.hostname) && open.port !== bound.port) {
  console.log(
    `Dashboard listening on ${dashboard.listening} (${provider}), but OIDC_REDIRECT_URI is on port ${open.port || 80}: set PORT=${open.port || 80}, or register a redirect URI on this port.`,
  );
} else if (dashboard.url !== dashboard.listening) {
  console.log(`Dashboard on ${dashboard.url} (${provider}; listening on ${bound.host})`);
} else {
  console.log(`Dashboard on ${dashboard.url} (${provider})`);
}
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => void dashboard.close().then(() => process.exit(0)));
}
