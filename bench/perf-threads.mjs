/**
 * Splits a Linux `perf` recording of one server process by thread, and the
 * main thread's samples by what it was running: SQLite, GC, an npm package,
 * an idt package, node internals, or native code with no JavaScript on the
 * stack.
 *
 *   node bench/perf-threads.mjs <perf.data> [--per <n>] [--top 20] [--json]
 *
 * `--per <n>`: the recording covered n requests (or flows); CPU time is then
 * also given in microseconds per request. With the bench's load, n is the
 * scenario's rate times the seconds recorded.
 *
 * The recording must have call stacks (`perf record -g -p <pid>`), and the
 * server must have been started with `--perf-basic-prof-only-functions` for
 * JavaScript frames to have names (see docs/benchmarks.md, *Running*). The
 * frames of the bench's bundle are mapped back to `packages/*` through its
 * source map when `main.mjs.map` is beside the bundle or beside the
 * recording (copy it from `bench/.build/<pid>/` while the bench runs: the
 * folder is removed at exit).
 *
 * Unlike a V8 CPU profile, `perf` samples each thread only while it runs,
 * so a main thread waiting for the core while a pool or GC thread runs is
 * not charged for it. The grouping is by the innermost JavaScript frame, so
 * a builtin or a runtime call counts for the package that called it. V8's
 * perf map can name a frame after code collected earlier at the same
 * address, so single functions can be misnamed; totals per package are the
 * figures to trust.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createFrameMapper, groupOf } from './profile-summary.mjs';

/** V8 garbage-collector frames, on whichever thread they run. */
const GC_FRAME = /Heap::|Scavenge|MarkCompact|Sweeper|IncrementalMarking|ConcurrentMarking|GCTracer|MinorMC/;
/** A JavaScript frame in V8's perf map: `JS:<tier><name> <script>:<line>:<column>` (1-based). */
const JS_FRAME = /^JS:[*^~+]?(\S*)\s+(\S+):(\d+):(\d+)$/;

/**
 * Parses `perf script` output into samples: the sampled thread and its
 * frames, innermost first.
 *
 * @param {string} text
 * @returns {{ pid: number, tid: number, frames: { symbol: string, dso: string }[] }[]}
 */
export function parsePerfScript(text) {
  const samples = [];
  let current;
  for (const line of text.split('\n')) {
    if (line.startsWith('\t')) {
      const frame = /^\s+[0-9a-f]+\s+(.*)\s+\((.*)\)$/.exec(line);
      if (frame && current) current.frames.push({ symbol: frame[1], dso: frame[2] });
      continue;
    }
    const header = /^\s*(\d+)\/(\d+)\s*$/.exec(line);
    if (header) {
      current = { pid: Number(header[1]), tid: Number(header[2]), frames: [] };
      samples.push(current);
    } else if (!line.trim()) {
      current = undefined;
    }
  }
  return samples;
}

/** What a sample's stack says about its thread: libuv's pool, V8's platform workers, or nothing. */
function threadHint(sample) {
  if (sample.frames.some((frame) => /PlatformWorkerThread|WorkerThreadsTaskRunner/.test(frame.symbol))) {
    return "V8's platform workers (GC, compiler)";
  }
  if (sample.frames.some((frame) => /^worker$|uv__work|ThreadPoolWork/.test(frame.symbol))) {
    return "libuv's pool (crypto, argon2id, file system)";
  }
  return undefined;
}

/**
 * The kind of each thread: the main thread (its id is the process id), or
 * what most of its samples' stacks say (a sample caught in the kernel or
 * with a cut stack says nothing).
 */
function threadKinds(samples) {
  const hints = new Map();
  for (const sample of samples) {
    if (sample.tid === sample.pid) continue;
    const hint = threadHint(sample);
    if (!hint) continue;
    const counts = hints.get(sample.tid) ?? new Map();
    counts.set(hint, (counts.get(hint) ?? 0) + 1);
    hints.set(sample.tid, counts);
  }
  const kinds = new Map();
  for (const sample of samples) {
    if (kinds.has(sample.tid)) continue;
    const counts = [...(hints.get(sample.tid) ?? [])].sort((a, b) => b[1] - a[1]);
    kinds.set(sample.tid, sample.tid === sample.pid ? 'main thread' : (counts[0]?.[0] ?? 'other threads'));
  }
  return kinds;
}

/** What a main-thread sample was running, by its stack. */
function mainThreadGroup(sample, mapFrame) {
  if (sample.frames.some((frame) => frame.dso.includes('better_sqlite3')))
    return 'SQLite (better-sqlite3, its system calls included)';
  for (const frame of sample.frames) {
    const js = JS_FRAME.exec(frame.symbol);
    if (js) {
      const mapped = mapFrame({ url: js[2], lineNumber: Number(js[3]) - 1, columnNumber: Number(js[4]) - 1 });
      return groupOf(mapped.url, js[1]);
    }
    if (GC_FRAME.test(frame.symbol)) return 'GC on the main thread';
  }
  return sample.frames.every((frame) => frame.dso.includes('kernel'))
    ? 'kernel, no JavaScript on the stack (event loop, sockets)'
    : 'native, no JavaScript on the stack';
}

/**
 * Reads a perf recording and returns the CPU time of each kind of thread and
 * of each group of the main thread.
 *
 * @param {string} file a `perf.data` file
 * @param {{ per?: number, top?: number }} [options]
 */
export function summarizePerf(file, { per, top = 20 } = {}) {
  if (!existsSync(file)) throw new Error(`${file}: no such file (record one with perf record -F 999 -g -p <pid> -o ${file})`);
  const read = (args) =>
    execFileSync('perf', [...args, '-i', file], { encoding: 'utf8', maxBuffer: 1 << 30, stdio: ['ignore', 'pipe', 'ignore'] });
  const frequency = Number(/sample_freq=(\d+)/.exec(read(['evlist', '-F']))?.[1] ?? 0);
  if (!frequency) throw new Error(`${file}: no sampling frequency (record with perf record -F <hz> -g)`);
  const summary = summarizePerfScript(read(['script', '-F', 'pid,tid,ip,sym,dso']), {
    frequency,
    per,
    top,
    mapFrame: createFrameMapper(dirname(file)),
  });
  return { file, ...summary };
}

/**
 * Summarizes `perf script -F pid,tid,ip,sym,dso` output (with call stacks):
 * samples, milliseconds of CPU and, with `per`, microseconds per request, by
 * kind of thread and, for the main thread, by group.
 *
 * @param {string} text
 * @param {{ frequency: number, per?: number, top?: number, mapFrame?: (frame: { url: string, lineNumber: number, columnNumber: number }) => { url: string } }} options
 */
export function summarizePerfScript(text, { frequency, per, top = 20, mapFrame = (frame) => frame }) {
  const samples = parsePerfScript(text);
  if (samples.length === 0) throw new Error('no samples: was the process running, and recorded with perf record -g?');
  const threads = new Map();
  const groups = new Map();
  const kinds = threadKinds(samples);
  let mainSamples = 0;
  for (const sample of samples) {
    const kind = kinds.get(sample.tid);
    const entry = threads.get(kind) ?? { samples: 0, tids: new Set() };
    entry.samples += 1;
    entry.tids.add(sample.tid);
    threads.set(kind, entry);
    if (kind !== 'main thread') continue;
    mainSamples += 1;
    const group = mainThreadGroup(sample, mapFrame);
    groups.set(group, (groups.get(group) ?? 0) + 1);
  }
  const cpu = (count) => ({
    samples: count,
    ms: Math.round((count / frequency) * 1000),
    ...(per ? { microsecondsPer: Math.round((count / frequency / per) * 1e6) } : {}),
  });
  return {
    frequency,
    pid: samples[0].pid,
    seconds: Number((samples.length / frequency).toFixed(2)),
    per,
    threads: [...threads]
      .sort((a, b) => b[1].samples - a[1].samples)
      .map(([kind, entry]) => ({ kind, threads: entry.tids.size, share: entry.samples / samples.length, ...cpu(entry.samples) })),
    mainThread: [...groups]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([group, count]) => ({ group, share: count / mainSamples, ...cpu(count) })),
  };
}

/** Renders a summary as text. */
export function formatPerfSummary(summary) {
  const pct = (share) => `${(share * 100).toFixed(1).padStart(5)}%`;
  const cost = (entry) =>
    `${String(entry.ms).padStart(7)} ms${entry.microsecondsPer === undefined ? '' : `  ${String(entry.microsecondsPer).padStart(6)} µs per request`}`;
  const lines = [
    `perf recording ${summary.file}: process ${summary.pid}, ${summary.seconds} s of CPU sampled at ${summary.frequency} Hz` +
      (summary.per ? `, over ${summary.per} requests` : ''),
    '  By thread:',
  ];
  for (const entry of summary.threads) {
    lines.push(
      `    ${pct(entry.share)} ${cost(entry)}  ${entry.kind} (${entry.threads} thread${entry.threads === 1 ? '' : 's'})`,
    );
  }
  lines.push('  Main thread, by the innermost JavaScript frame (SQLite and GC first):');
  for (const entry of summary.mainThread) lines.push(`    ${pct(entry.share)} ${cost(entry)}  ${entry.group}`);
  return lines.join('\n');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const args = process.argv.slice(2);
  const value = (name) => {
    const index = args.indexOf(name);
    return index >= 0 ? args[index + 1] : undefined;
  };
  const file = args.find((arg, index) => !arg.startsWith('--') && !['--per', '--top'].includes(args[index - 1]));
  const per = value('--per') === undefined ? undefined : Number(value('--per'));
  const top = value('--top') === undefined ? 20 : Number(value('--top'));
  if (!file || (per !== undefined && !(per > 0)) || !(top > 0)) {
    console.error('usage: node bench/perf-threads.mjs <perf.data> [--per <requests>] [--top 20] [--json]');
    process.exit(2);
  }
  try {
    const summary = summarizePerf(file, { per, top });
    console.log(args.includes('--json') ? JSON.stringify(summary, null, 2) : formatPerfSummary(summary));
  } catch (error) {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  }
}
