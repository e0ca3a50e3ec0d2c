/** One line of a {@link PerfSummary}: samples and the CPU time they stand for. */
export interface PerfCost {
  samples: number;
  /** Milliseconds of CPU: samples divided by the sampling frequency. */
  ms: number;
  /** With `per`: microseconds of CPU per request. */
  microsecondsPer?: number;
  /** Share of all samples (threads) or of the main thread's samples (groups). */
  share: number;
}

/** CPU time of a perf recording by kind of thread, and the main thread's by group. */
export interface PerfSummary {
  file?: string;
  frequency: number;
  pid: number;
  seconds: number;
  per?: number;
  threads: (PerfCost & { kind: string; threads: number })[];
  mainThread: (PerfCost & { group: string })[];
}

/** Parses `perf script -F pid,tid,ip,sym,dso` output: each sample's thread and its frames, innermost first. */
export declare function parsePerfScript(text: string): { pid: number; tid: number; frames: { symbol: string; dso: string }[] }[];

/** Summarizes `perf script -F pid,tid,ip,sym,dso` output recorded with call stacks. */
export declare function summarizePerfScript(
  text: string,
  options: {
    frequency: number;
    per?: number;
    top?: number;
    mapFrame?: (frame: { url: string; lineNumber: number; columnNumber: number }) => { url: string };
  },
): PerfSummary;

/** Runs `perf` on a recording and summarizes it (source-mapping bundled frames). */
export declare function summarizePerf(file: string, options?: { per?: number; top?: number }): PerfSummary;

/** Renders a summary as text. */
export declare function formatPerfSummary(summary: PerfSummary): string;
