import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { formatPerfSummary, summarizePerfScript } from '../bench/perf-threads.mjs';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** `perf script -F pid,tid,ip,sym,dso` output as perf prints it: a header per sample, then its frames. */
function perfScript(samples: { tid: number; frames: [symbol: string, dso: string][] }[]): string {
  return samples
    .map(
      ({ tid, frames }) =>
        ` 100/${tid}  \n${frames.map(([symbol, dso], index) => `\t    ${(0x1000 + index).toString(16)} ${symbol} (${dso})`).join('\n')}\n`,
    )
    .join('\n');
}

const NODE = '/usr/bin/node';
const MAP = '/tmp/perf-100.map';

describe('bench/perf-threads.mjs', () => {
  const text = perfScript([
    // Main thread (tid = pid).
    {
      tid: 100,
      frames: [
        ['sqlite3VdbeExec', '/x/build/Release/better_sqlite3.node'],
        ['Statement::JS_run', '/x/build/Release/better_sqlite3.node'],
        [`JS:*upsert file://${ROOT}packages/oidc/src/knex/adapter.ts:132:17`, MAP],
      ],
    },
    {
      tid: 100,
      frames: [
        ['copy_folio_from_iter_atomic', '[kernel.kallsyms]'],
        ['pwrite64', '/lib/libc.so.6'],
        ['walWriteToLog', '/x/better_sqlite3.node'],
        ['Builtins_CallApiCallback', NODE],
      ],
    },
    {
      tid: 100,
      frames: [
        ['Builtins_LoadIC', NODE],
        [`JS:*refreshTokenHandler file://${ROOT}node_modules/oidc-provider/lib/actions/grants/refresh_token.js:24:58`, MAP],
      ],
    },
    {
      tid: 100,
      frames: [
        [`JS:^ ${ROOT}node_modules/@node-rs/argon2/index.js:10:3`, MAP],
        ['Builtins_JSEntry', NODE],
      ],
    },
    { tid: 100, frames: [[`JS:*find file://${ROOT}packages/oidc/src/knex/adapter.ts:150:9`, MAP]] },
    {
      tid: 100,
      frames: [
        ['v8::internal::Scavenger::ScavengeObject<v8::internal::FullHeapObjectSlot>', NODE],
        ['Builtins_AllocateInYoungGeneration', NODE],
        [`JS:*find file://${ROOT}packages/oidc/src/knex/adapter.ts:150:9`, MAP],
      ],
    },
    { tid: 100, frames: [['JS:*promiseInitHook node:internal/async_hooks:320:25', MAP]] },
    {
      tid: 100,
      frames: [
        ['finish_task_switch.isra.0', '[kernel.kallsyms]'],
        ['__schedule', '[kernel.kallsyms]'],
      ],
    },
    {
      tid: 100,
      frames: [
        ['uv__io_poll', NODE],
        ['uv_run', NODE],
      ],
    },
    // libuv's pool: a signature.
    {
      tid: 101,
      frames: [
        ['ossl_rsaz_amm52x20_x2_256', NODE],
        ['node::crypto::SignTraits::DeriveBits', NODE],
        ['worker', NODE],
        ['start_thread', '/lib/libc.so.6'],
      ],
    },
    {
      tid: 102,
      frames: [
        ['ossl_rsaz_amm52x20_x2_256', NODE],
        ['worker', NODE],
      ],
    },
    // V8's platform workers: concurrent marking.
    {
      tid: 103,
      frames: [
        ['v8::internal::ConcurrentMarking::RunMajor', NODE],
        ['node::(anonymous namespace)::PlatformWorkerThread(void*)', NODE],
      ],
    },
  ]);

  it('splits the samples by thread, and the main thread by what it ran', () => {
    const summary = summarizePerfScript(text, { frequency: 1000, per: 2 });
    expect(summary).toMatchObject({ pid: 100, frequency: 1000, seconds: 0.01, per: 2 });
    expect(summary.threads).toEqual([
      { kind: 'main thread', threads: 1, samples: 9, share: 9 / 12, ms: 9, microsecondsPer: 4500 },
      {
        kind: "libuv's pool (crypto, argon2id, file system)",
        threads: 2,
        samples: 2,
        share: 2 / 12,
        ms: 2,
        microsecondsPer: 1000,
      },
      { kind: "V8's platform workers (GC, compiler)", threads: 1, samples: 1, share: 1 / 12, ms: 1, microsecondsPer: 500 },
    ]);
    const groups = Object.fromEntries(summary.mainThread.map((entry) => [entry.group, entry.samples]));
    expect(groups).toEqual({
      'SQLite (better-sqlite3, its system calls included)': 2,
      '@idt/oidc': 1,
      'GC on the main thread': 1,
      'oidc-provider': 1,
      '@node-rs/argon2': 1,
      'node internals': 1,
      'kernel, no JavaScript on the stack (event loop, sockets)': 1,
      'native, no JavaScript on the stack': 1,
    });
    expect(summary.mainThread[0]).toMatchObject({
      group: 'SQLite (better-sqlite3, its system calls included)',
      ms: 2,
      microsecondsPer: 1000,
    });
  });

  it('maps frames through the given mapper (a bundle back to its sources) and renders text', () => {
    const bundled = perfScript([
      { tid: 7, frames: [['JS:*upsert file:///srv/bench/.build/1/main.mjs:13006:17', MAP]] },
    ]).replaceAll(' 100/', ' 7/');
    const seen: unknown[] = [];
    const summary = summarizePerfScript(bundled, {
      frequency: 999,
      mapFrame: (frame) => {
        seen.push(frame);
        return { url: `file://${ROOT}packages/oidc/src/knex/adapter.ts` };
      },
    });
    // perf's line and column are 1-based; a source map's are 0-based.
    expect(seen).toEqual([{ url: 'file:///srv/bench/.build/1/main.mjs', lineNumber: 13005, columnNumber: 16 }]);
    expect(summary.mainThread).toEqual([{ group: '@idt/oidc', samples: 1, share: 1, ms: 1 }]);
    expect(formatPerfSummary({ file: 'idt.perf', ...summary })).toMatch(/100\.0%\s+1 ms {2}@idt\/oidc/);
  });

  it('refuses output without samples', () => {
    expect(() => summarizePerfScript('', { frequency: 999 })).toThrow(/no samples/);
  });
});
