/**
 * CPU accounting shared by the load generators (bench/load.mjs,
 * bench/load-flow.mjs) and bench/baseline-argon2.mjs: the CPU time of the
 * server, of the measuring process and of everything else on the machine
 * over a measured run, in cores (Linux /proc; undefined elsewhere).
 */
import { readFileSync } from 'node:fs';

const TICKS_PER_SECOND = 100;

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

/**
 * Starts measuring; `stop()` returns `{ server, loadGenerator, other,
 * machineBusy }` in cores over the elapsed time, or undefined without /proc.
 * `serverPid` may be this very process (bench/baseline-argon2.mjs); then
 * `loadGenerator` is 0. With `upstreamPid` (the single sign-on row's
 * upstream idt), its CPU is `upstream`, not part of `other`.
 */
export function startCpuMeter(serverPid, upstreamPid) {
  const startedAt = process.hrtime.bigint();
  const machineBefore = machineTicks();
  const serverBefore = serverPid ? processTicks(serverPid) : undefined;
  const upstreamBefore = upstreamPid ? processTicks(upstreamPid) : undefined;
  const selfBefore = process.cpuUsage();
  return {
    stop() {
      const seconds = Number(process.hrtime.bigint() - startedAt) / 1e9;
      const machineAfter = machineTicks();
      const serverAfter = serverPid ? processTicks(serverPid) : undefined;
      const self = process.cpuUsage(selfBefore);
      if (!machineBefore || !machineAfter || serverBefore === undefined || serverAfter === undefined) return undefined;
      const busy = (machineAfter.busy - machineBefore.busy) / TICKS_PER_SECOND / seconds;
      const server = (serverAfter - serverBefore) / TICKS_PER_SECOND / seconds;
      const load = serverPid === process.pid ? 0 : (self.user + self.system) / 1e6 / seconds;
      const upstreamAfter = upstreamPid ? processTicks(upstreamPid) : undefined;
      const upstream =
        upstreamBefore !== undefined && upstreamAfter !== undefined
          ? (upstreamAfter - upstreamBefore) / TICKS_PER_SECOND / seconds
          : undefined;
      return {
        server,
        loadGenerator: load,
        ...(upstream !== undefined ? { upstream } : {}),
        other: Math.max(0, busy - server - load - (upstream ?? 0)),
        machineBusy: busy,
      };
    },
  };
}

/** Latency figures (milliseconds, whole numbers like autocannon's) of a list of durations. */
export function latencySummary(durationsMs) {
  if (durationsMs.length === 0) return { mean: 0, p50: 0, p90: 0, p99: 0, max: 0 };
  const sorted = Float64Array.from(durationsMs).sort();
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
  const mean = sorted.reduce((sum, value) => sum + value, 0) / sorted.length;
  return {
    mean: Number(mean.toFixed(2)),
    p50: Math.round(at(0.5)),
    p90: Math.round(at(0.9)),
    p99: Math.round(at(0.99)),
    max: Math.round(sorted[sorted.length - 1]),
  };
}
