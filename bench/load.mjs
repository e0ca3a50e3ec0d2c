/**
 * The load generator, run by bench/run.mjs as its own process (pinned to
 * another core than the server when taskset exists): a warm-up run, then the
 * measured run, with autocannon. Prints one JSON line with the figures of the
 * measured run.
 *
 *   node bench/load.mjs '<json options>'
 *
 * Options: { url, method, headers, body, connections, duration, warmup,
 * serverPid } (durations in seconds). With `serverPid`, the CPU time of the
 * server, of this process and of everything else on the machine during the
 * measured run is reported too (Linux /proc), in cores.
 */
import { readFileSync } from 'node:fs';
import autocannon from 'autocannon';

const options = JSON.parse(process.argv[2] ?? '{}');

function run(duration) {
  return autocannon({
    url: options.url,
    method: options.method ?? 'GET',
    headers: options.headers ?? {},
    ...(options.body === undefined ? {} : { body: options.body }),
    connections: options.connections ?? 20,
    pipelining: 1,
    duration,
    timeout: 10,
  });
}

/** Busy and total clock ticks of all CPUs, from /proc/stat. */
function machineTicks() {
  try {
    const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
    const idle = (fields[3] ?? 0) + (fields[4] ?? 0);
    const total = fields.reduce((sum, value) => sum + value, 0);
    return { busy: total - idle, total };
  } catch {
    return undefined;
  }
}

/** User plus system clock ticks of a process, from /proc/<pid>/stat. */
function processTicks(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return undefined;
  }
}

const TICKS_PER_SECOND = 100;

if ((options.warmup ?? 0) > 0) await run(options.warmup);
const startedAt = process.hrtime.bigint();
const machineBefore = machineTicks();
const serverBefore = options.serverPid ? processTicks(options.serverPid) : undefined;
const selfBefore = process.cpuUsage();
const result = await run(options.duration ?? 10);
const seconds = Number(process.hrtime.bigint() - startedAt) / 1e9;
const machineAfter = machineTicks();
const serverAfter = options.serverPid ? processTicks(options.serverPid) : undefined;
const self = process.cpuUsage(selfBefore);
let cpu;
if (machineBefore && machineAfter && serverBefore !== undefined && serverAfter !== undefined) {
  const busy = (machineAfter.busy - machineBefore.busy) / TICKS_PER_SECOND / seconds;
  const server = (serverAfter - serverBefore) / TICKS_PER_SECOND / seconds;
  const load = (self.user + self.system) / 1e6 / seconds;
  cpu = { server, loadGenerator: load, other: Math.max(0, busy - server - load), machineBusy: busy };
}
const ok = result['2xx'];
// autocannon counts timeouts among errors too.
const failed = result.non2xx + result.errors;
process.stdout.write(
  `${JSON.stringify({
    requestsPerSecond: result.requests.average,
    okPerSecond: ok / result.duration,
    total: result.requests.total,
    failed,
    ok,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    failedRatio: result.requests.total + result.errors > 0 ? failed / (result.requests.total + result.errors) : 1,
    statusCodes: result.statusCodeStats,
    latency: {
      mean: result.latency.mean,
      p50: result.latency.p50,
      p90: result.latency.p90,
      p99: result.latency.p99,
      max: result.latency.max,
    },
    durationSeconds: result.duration,
    ...(cpu ? { cpu } : {}),
    connections: result.connections,
  })}\n`,
);
