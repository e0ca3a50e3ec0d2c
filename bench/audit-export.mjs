/**
 * The measuring process of the scim-audit group's audit rows, run by
 * bench/run.mjs as its own process (on the load core): it reads a whole
 * audit export (`GET /v1/audit/events/export`, NDJSON or CSV) again and
 * again, or times `GET /v1/audit/verify`, and prints one JSON line in the
 * shape of bench/load.mjs's (so the table shows it), plus the export's own
 * figures.
 *
 *   node bench/audit-export.mjs '<json options>'
 *
 * Options: { mode: 'export' | 'verify', url, headers, records (the records
 * the chain holds), format ('ndjson' | 'csv'), warmup, duration, serverPid }
 * (durations in seconds).
 *
 * - `export`: with a warm-up, one whole export first, not counted. Then whole
 *   exports one after the other until `duration` passed (at least one). Each
 *   is read to its end and must hold `records` lines (CSV: and a header);
 *   the first one read is also parsed (NDJSON: every record's sequence follows
 *   the one before and its `prevHash` is the hash before it; CSV: the same
 *   from the sequence and hash columns). While each measured export streams,
 *   the server's `VmRSS` is read every 50 ms (/proc/<serverPid>/status), and
 *   its `VmHWM` is reset first (`5` written to /proc/<serverPid>/clear_refs)
 *   and read after, so `peakRssMiB` is the largest resident memory of the
 *   server during an export (the larger of both). `requestsPerSecond` is
 *   records per second of the median export; latency is per whole export.
 * - `verify`: the same loop over `GET /v1/audit/verify`, which must answer
 *   `valid: true` and `checked: records`; `requestsPerSecond` is records
 *   checked per second of the median run.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { startCpuMeter } from './cpu.mjs';

const options = JSON.parse(process.argv[2] ?? '{}');
const { mode = 'export', url, headers = {}, records, format = 'ndjson', serverPid } = options;
const SAMPLE_MS = 50;

/** VmRSS and VmHWM of the server, in MiB (NaN without /proc). */
function memory() {
  try {
    const status = readFileSync(`/proc/${serverPid}/status`, 'utf8');
    const kib = (field) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? Number.NaN);
    return { rssMiB: kib('VmRSS') / 1024, hwmMiB: kib('VmHWM') / 1024 };
  } catch {
    return { rssMiB: Number.NaN, hwmMiB: Number.NaN };
  }
}

/** Resets the server's VmHWM to its current RSS (Linux ≥ 4.0, our own child); false when it cannot. */
function resetPeak() {
  if (!serverPid) return false;
  try {
    writeFileSync(`/proc/${serverPid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

/** Checks the first export's records: sequences 1…records in order, each `prevHash` the hash before it. */
function checkChain(text) {
  const lines = text.split('\n').filter((line) => line.length > 0);
  const rows =
    format === 'csv'
      ? lines.slice(1).map((line) => {
          // sequence is the 2nd column, prevHash and hash the last two (hex: never quoted).
          const fields = line.replace(/\r$/, '').split(',');
          return { sequence: Number(fields[1]), prevHash: fields.at(-2), hash: fields.at(-1) };
        })
      : lines.map((line) => JSON.parse(line));
  let previous = '0'.repeat(64);
  for (let index = 0; index < rows.length; index++) {
    const row = rows[index];
    if (row.sequence !== index + 1) return `record ${index + 1} has sequence ${row.sequence}`;
    if (row.prevHash !== previous) return `record ${index + 1}'s prevHash is not the hash of the record before it`;
    previous = row.hash;
  }
  return undefined;
}

/** One whole export (or verification), read to its end; `take` runs after every chunk. */
async function read(parse, take) {
  const started = performance.now();
  try {
    const response = await fetch(url, { headers, signal: AbortSignal.timeout(300_000) });
    if (mode === 'verify' || response.status !== 200) {
      const body = await response.text();
      const ms = performance.now() - started;
      if (response.status !== 200) return { ms, status: response.status, problem: body.slice(0, 500) };
      const result = JSON.parse(body);
      const problem =
        result.valid === true && result.checked === records
          ? undefined
          : `expected a valid chain of ${records} records: ${body.slice(0, 300)}`;
      return { ms, status: 200, problem, bytes: body.length };
    }
    const reader = response.body.getReader();
    let newlines = 0;
    let bytes = 0;
    const chunks = parse ? [] : undefined;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      bytes += value.byteLength;
      for (let at = value.indexOf(10); at !== -1; at = value.indexOf(10, at + 1)) newlines++;
      chunks?.push(Buffer.from(value));
      take?.();
    }
    const ms = performance.now() - started;
    const expected = format === 'csv' ? records + 1 : records;
    let problem = newlines === expected ? undefined : `${newlines} lines, expected ${expected}`;
    if (!problem && chunks) problem = checkChain(Buffer.concat(chunks).toString('utf8'));
    return { ms, status: 200, problem, bytes, lines: newlines };
  } catch (error) {
    return { ms: performance.now() - started, status: 0, problem: error.message };
  }
}

/**
 * One whole export or verification; with `sample`, the server's VmHWM reset first, its VmRSS read every
 * 50 ms and after every chunk while it streams, and its VmHWM read after (`memory`).
 */
async function once({ sample, parse }) {
  if (!sample) return read(parse);
  const memoryDuring = { rssMiB: 0 };
  const take = () => {
    const { rssMiB } = memory();
    if (rssMiB > memoryDuring.rssMiB) memoryDuring.rssMiB = rssMiB;
  };
  const reset = resetPeak();
  memoryDuring.beforeMiB = memory().rssMiB;
  const timer = setInterval(take, SAMPLE_MS);
  take();
  try {
    return { ...(await read(parse, take)), memory: memoryDuring };
  } finally {
    clearInterval(timer);
    take();
    memoryDuring.hwmMiB = reset ? memory().hwmMiB : Number.NaN;
    memoryDuring.hwmReset = reset;
  }
}

let checkedChain = false;
if ((options.warmup ?? 0) > 0) {
  const warm = await once({ sample: false, parse: mode === 'export' });
  checkedChain = mode === 'export' && warm.status === 200;
  if (warm.problem) {
    process.stderr.write(`warm-up: ${warm.status} ${warm.problem}\n`);
  }
}
const meter = startCpuMeter(serverPid);
const started = performance.now();
const runs = [];
do {
  const result = await once({ sample: mode === 'export', parse: mode === 'export' && !checkedChain });
  checkedChain = true;
  runs.push(result);
} while ((performance.now() - started) / 1000 < (options.duration ?? 10));
const cpu = meter.stop();
const seconds = (performance.now() - started) / 1000;

const good = runs.filter((run) => run.status === 200 && !run.problem);
const failed = runs.length - good.length;
const times = good.map((run) => run.ms).sort((a, b) => a - b);
const medianMs = times.length ? times[Math.floor((times.length - 1) / 2)] : Number.NaN;
const statusCodes = {};
for (const run of runs) statusCodes[run.status] = { count: (statusCodes[run.status]?.count ?? 0) + 1 };
const peakOf = (run) => Math.max(run.memory?.rssMiB ?? Number.NaN, Number.isFinite(run.memory?.hwmMiB) ? run.memory.hwmMiB : 0);
const peaks = runs.filter((run) => mode === 'export' && run.memory).map(peakOf);
const firstFailure = runs.find((run) => run.status !== 200 || run.problem);
process.stdout.write(
  `${JSON.stringify({
    requestsPerSecond: Number.isFinite(medianMs) ? (records * 1000) / medianMs : 0,
    total: runs.length,
    ok: good.length,
    failed,
    non2xx: runs.filter((run) => run.status !== 200 && run.status !== 0).length,
    errors: runs.filter((run) => run.status === 0).length,
    failedRatio: runs.length ? failed / runs.length : 1,
    statusCodes,
    ...(firstFailure ? { failures: [{ status: firstFailure.status, message: firstFailure.problem ?? '' }] } : {}),
    latency: {
      mean: times.length ? Math.round(times.reduce((sum, ms) => sum + ms, 0) / times.length) : Number.NaN,
      p50: Math.round(medianMs),
      p90: Math.round(times[Math.floor(times.length * 0.9)] ?? medianMs),
      p99: Math.round(times.at(-1) ?? medianMs),
      max: Math.round(times.at(-1) ?? medianMs),
    },
    durationSeconds: seconds,
    ...(cpu ? { cpu } : {}),
    audit: {
      mode,
      format,
      records,
      runs: runs.length,
      exportMs: times.map((ms) => Math.round(ms)),
      bytes: good[0]?.bytes,
      ...(mode === 'export'
        ? {
            peakRssMiB: peaks.length ? Math.max(...peaks) : Number.NaN,
            rssBeforeMiB: runs.map((run) => Number((run.memory?.beforeMiB ?? Number.NaN).toFixed(1))),
            sampledPeakRssMiB: runs.map((run) => Number((run.memory?.rssMiB ?? Number.NaN).toFixed(1))),
            hwmMiB: runs.map((run) => Number((run.memory?.hwmMiB ?? Number.NaN).toFixed(1))),
            hwmReset: runs.every((run) => run.memory?.hwmReset === true),
            sampleEveryMs: SAMPLE_MS,
          }
        : {}),
    },
  })}\n`,
);
