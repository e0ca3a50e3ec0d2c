/**
 * The flow load generator, run by bench/run.mjs as its own process (pinned
 * like bench/load.mjs): flows that autocannon cannot replay, each worker
 * looping over one whole flow. A warm-up, then the measured run; prints one
 * JSON line with the same figures as bench/load.mjs (requests/s counts
 * finished flows, latency is one whole flow).
 *
 *   node bench/load-flow.mjs '<json options>'
 *
 * Options: { mode, baseUrl, clientId, clientSecret, duration, warmup,
 * serverPid, upstreamPid, … } (durations in seconds):
 *
 * - mode `refresh`: { refreshTokens: [...] }: one worker per token, each
 *   holding its own rotation chain (every grant returns the next refresh
 *   token). A worker whose grant fails stops (its chain may be spent). The
 *   last token of every chain is printed as `refreshTokens`, for the next
 *   round.
 * - mode `signin`: { concurrency, redirectUri, scope, email, password }:
 *   each worker signs in again and again, with a fresh cookie jar: authorize,
 *   the sign-in form, consent or organization choice when asked, code
 *   exchange with PKCE. With `totpUsers` ([{ email, secret, lastStep }],
 *   the password being `password`), each sign-in is a user of that pool,
 *   and the second-factor page is answered with the user's TOTP code (RFC
 *   6238, computed with otplib): a code works once, so each sign-in uses a
 *   time step of its user later than the last one used, the current or the
 *   next (both within the server's one step of drift).
 *   With `ssoUsers` ([email, …], the password being `password`) and
 *   `upstreamOrigin`, each sign-in is single sign-on through the upstream
 *   idt, the users of the pool in turn: the address on the identifier-first
 *   page, the page that moves on to the upstream, the upstream's own
 *   sign-in (and consent when asked), back through the downstream's
 *   callback to the interaction, the downstream's consent when asked, the
 *   code exchange; a cookie jar per origin. A sign-in that did not reach the
 *   upstream is a failure. The first sign-in of each user provisions it
 *   just in time; the later ones find it (returning users).
 *
 * Failed flows are counted (`failed`, `failedRatio`, `statusCodes`; those
 * of the warm-up included), and the first few are printed as `failures` with
 * the status and the start of the body.
 */

import { generateSync } from 'otplib';
import { latencySummary, startCpuMeter } from './cpu.mjs';
import { createAgent, refresh, signIn } from './flow-client.mjs';

const options = JSON.parse(process.argv[2] ?? '{}');
const { mode, baseUrl, clientId, clientSecret } = options;
if (!['refresh', 'signin'].includes(mode)) {
  console.error(`unknown mode ${mode}`);
  process.exit(2);
}

const chains = mode === 'refresh' ? [...(options.refreshTokens ?? [])] : [];
const workers = mode === 'refresh' ? chains.length : (options.concurrency ?? 4);
if (workers < 1) {
  console.error('no workers (no refresh tokens?)');
  process.exit(2);
}
const agent = createAgent(workers * 2);
const failures = [];
const alive = new Set(Array.from({ length: workers }, (_, index) => index));
const totpUsers = (options.totpUsers ?? []).map((user) => ({ ...user, last: user.lastStep ?? 0 }));
let totpCursor = 0;
const ssoUsers = options.ssoUsers ?? [];
let ssoCursor = 0;
if (ssoUsers.length > 0 && !options.upstreamOrigin) {
  console.error('ssoUsers needs upstreamOrigin');
  process.exit(2);
}
/** How many times a worker waited for the next time step (a pool too small for the rate: the figure is then low). */
let totpWaits = 0;

/**
 * The next TOTP user with a time step it has not used yet: the current one
 * or the next (never an earlier one, which could fall out of the server's
 * drift window before its form arrives). Waits for the next step when every
 * user of the pool used both (a pool too small for the rate).
 */
async function nextTotpUser() {
  for (;;) {
    const now = Math.floor(Date.now() / 30_000);
    for (let offset = 0; offset < totpUsers.length; offset++) {
      const user = totpUsers[(totpCursor + offset) % totpUsers.length];
      const step = Math.max(user.last + 1, now);
      if (step > now + 1) continue;
      totpCursor = (totpCursor + offset + 1) % totpUsers.length;
      user.last = step;
      return { email: user.email, code: () => generateSync({ secret: user.secret, epoch: step * 30 }) };
    }
    totpWaits++;
    await new Promise((resolve) => setTimeout(resolve, (now + 1) * 30_000 - Date.now() + 10));
  }
}

/** One flow of worker `index`. */
async function flow(index) {
  if (mode === 'refresh') {
    const tokens = await refresh({ baseUrl, clientId, clientSecret, refreshToken: chains[index], agent });
    chains[index] = tokens.refresh_token;
    return;
  }
  const totp = totpUsers.length > 0 ? await nextTotpUser() : undefined;
  const ssoEmail = ssoUsers.length > 0 ? ssoUsers[ssoCursor++ % ssoUsers.length] : undefined;
  const tokens = await signIn({
    baseUrl,
    clientId,
    clientSecret,
    redirectUri: options.redirectUri,
    scope: options.scope,
    email: ssoEmail ?? totp?.email ?? options.email,
    password: options.password,
    agent,
    ...(totp ? { secondFactor: totp.code } : {}),
    ...(ssoEmail ? { upstreamOrigin: options.upstreamOrigin } : {}),
  });
  if (!tokens.access_token) throw Object.assign(new Error('the code exchange returned no access token'), { status: 200 });
  return tokens.requests;
}

/** Runs every worker until `seconds` have passed; returns the counts and latencies of that phase. */
async function phase(seconds) {
  const deadline = performance.now() + seconds * 1000;
  const latencies = [];
  const statusCodes = {};
  let ok = 0;
  let failed = 0;
  let requests = 0;
  let errors = 0;
  const worker = async (index) => {
    while (alive.has(index) && performance.now() < deadline) {
      const started = performance.now();
      try {
        // Not `requests += await …`: the sum would be read before the await, losing the other workers' counts.
        const sent = await flow(index);
        requests += sent ?? 0;
        latencies.push(performance.now() - started);
        ok++;
      } catch (error) {
        failed++;
        const status = error.status ?? 0;
        if (status === 0) errors++;
        statusCodes[status] = (statusCodes[status] ?? 0) + 1;
        if (failures.length < 3)
          failures.push({ status, message: error.message, ...(error.body ? { body: String(error.body).slice(0, 500) } : {}) });
        // A refresh chain is spent after a failure; a sign-in starts afresh.
        if (mode === 'refresh') alive.delete(index);
      }
    }
  };
  const startedAt = performance.now();
  await Promise.all([...alive].map(worker));
  return { ok, failed, errors, statusCodes, latencies, requests, seconds: (performance.now() - startedAt) / 1000 };
}

// Failures of the warm-up count too: a refresh chain that ends there would otherwise vanish unseen.
const warmup = (options.warmup ?? 0) > 0 ? await phase(options.warmup) : { failed: 0, errors: 0, statusCodes: {} };
// Sign-ins started before the measurement: the users of the pool not reached yet sign in for the first time in it.
const ssoFirstSignInsMeasured = Math.max(0, ssoUsers.length - ssoCursor);
const meter = startCpuMeter(options.serverPid, options.upstreamPid);
const result = await phase(options.duration ?? 10);
const cpu = meter.stop();
agent.destroy();
result.failed += warmup.failed;
result.errors += warmup.errors;
for (const [status, value] of Object.entries(warmup.statusCodes))
  result.statusCodes[status] = (result.statusCodes[status] ?? 0) + value;
const total = result.ok + result.failed;
process.stdout.write(
  `${JSON.stringify({
    requestsPerSecond: result.ok / result.seconds,
    okPerSecond: result.ok / result.seconds,
    total,
    failed: result.failed,
    ok: result.ok,
    non2xx: result.failed - result.errors,
    errors: result.errors,
    timeouts: 0,
    failedRatio: total > 0 ? result.failed / total : 1,
    statusCodes: { ...(result.ok ? { 200: result.ok } : {}), ...result.statusCodes },
    latency: latencySummary(result.latencies),
    durationSeconds: result.seconds,
    ...(cpu ? { cpu } : {}),
    connections: workers,
    ...(mode === 'refresh' ? { refreshTokens: chains.filter((_, index) => alive.has(index)) } : {}),
    ...(failures.length ? { failures } : {}),
    ...(totpWaits ? { totpWaits } : {}),
    ...(mode === 'signin' && result.ok > 0 ? { requestsPerFlow: Number((result.requests / result.ok).toFixed(1)) } : {}),
    ...(ssoUsers.length ? { ssoUsers: ssoUsers.length, ssoFirstSignInsMeasured } : {}),
  })}\n`,
);
