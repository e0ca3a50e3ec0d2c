/**
 * Helpers of the quick-start tests: fresh clones of this checkout that are
 * ready to run without `npm install`, shell blocks run as a person would in
 * one terminal, and long-running commands in another.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { cpSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, readlinkSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The checkout the tests run in. */
export const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** The workspaces with a build, whose dist/ a clone needs. */
function builtWorkspaces(root: string): string[] {
  const found: string[] = [];
  for (const group of ['packages', 'examples']) {
    for (const name of readdirSync(join(root, group))) {
      const manifest = join(root, group, name, 'package.json');
      if (!existsSync(manifest)) continue;
      if (JSON.parse(readFileSync(manifest, 'utf8')).scripts?.build) found.push(join(group, name));
    }
  }
  return found;
}

/**
 * Gives a clone the installed dependencies of {@link ROOT} without `npm
 * install`: its own node_modules of links into ROOT's, except the workspace
 * packages (`@idt/*`) and the binaries, which point into the clone itself.
 */
export function linkNodeModules(clone: string): void {
  const source = join(ROOT, 'node_modules');
  const target = join(clone, 'node_modules');
  mkdirSync(target);
  for (const entry of readdirSync(source)) {
    const from = join(source, entry);
    if (entry === '.bin' || entry === '@idt') {
      // Relative links (../@idt/cli/bin/idt.js, ../../packages/cli) resolve inside the clone.
      mkdirSync(join(target, entry));
      for (const inner of readdirSync(from)) {
        const path = join(from, inner);
        if (lstatSync(path).isSymbolicLink()) symlinkSync(readlinkSync(path), join(target, entry, inner));
      }
    } else {
      symlinkSync(from, join(target, entry));
    }
  }
  // Workspaces with dependencies of their own (packages/notifications' ws 8).
  for (const workspace of builtWorkspaces(ROOT)) {
    const inner = join(ROOT, workspace, 'node_modules');
    if (existsSync(inner) && existsSync(join(clone, workspace)) && !existsSync(join(clone, workspace, 'node_modules'))) {
      symlinkSync(inner, join(clone, workspace, 'node_modules'));
    }
  }
}

/** Builds every workspace of a clone with tsup, without type declarations (seconds instead of minutes). */
export function buildWithoutTypes(clone: string): void {
  execFileSync('npm', ['run', 'build', '--silent', '--workspaces', '--if-present', '--', '--no-dts'], {
    cwd: clone,
    stdio: 'pipe',
    env: cleanEnv(),
  });
}

/** Copies the dist/ of every workspace of one clone into another of the same commit. */
export function copyBuild(from: string, to: string): void {
  for (const workspace of builtWorkspaces(from)) {
    const dist = join(from, workspace, 'dist');
    if (existsSync(dist)) cpSync(dist, join(to, workspace, 'dist'), { recursive: true });
  }
}

/** A clone of {@link ROOT}'s HEAD in `dir`. */
export function cloneRepository(dir: string, name: string): string {
  execFileSync('git', ['clone', '--quiet', ROOT, name], { cwd: dir, stdio: 'pipe' });
  return join(dir, name);
}

/**
 * The environment of a fresh terminal: PATH and HOME, nothing of idt's or of
 * the test runner's (no IDT_*, no NODE_OPTIONS, no VITEST).
 */
export function cleanEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of ['PATH', 'HOME', 'LANG', 'TERM', 'TMPDIR']) {
    const value = process.env[name];
    if (value !== undefined) env[name] = value;
  }
  return { ...env, npm_config_update_notifier: 'false', npm_config_fund: 'false', ...extra };
}

/** A process started by a test, with what it has written so far. */
export interface Started {
  readonly child: ChildProcess;
  readonly output: () => string;
  readonly stdout: () => string;
  readonly stderr: () => string;
  /** Resolves with the exit code. */
  readonly exited: Promise<number | null>;
  /** Waits until the output matches; fails with the output when the process exits first or time runs out. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpExecArray>;
  /** Stops the process and everything it started (its process group). */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Starts `bash -c script` in its own process group. */
export function startBash(script: string, cwd: string, env: Record<string, string>): Started {
  const child = spawn('bash', ['-c', script], { cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  let all = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk;
    all += chunk;
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk;
    all += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let done = false;
  void exited.then(() => {
    done = true;
  });
  return {
    child,
    exited,
    output: () => all,
    stdout: () => stdout,
    stderr: () => stderr,
    async waitFor(pattern, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const match = pattern.exec(all);
        if (match) return match;
        if (done || Date.now() > deadline) {
          throw new Error(`${done ? 'Exited' : 'Timed out'} before printing ${pattern}:\n${all}`);
        }
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    },
    async stop(signal = 'SIGINT') {
      if (!done && child.pid !== undefined) {
        try {
          process.kill(-child.pid, signal);
        } catch {
          // already gone
        }
        const timer = setTimeout(() => {
          if (!done && child.pid !== undefined) {
            try {
              process.kill(-child.pid, 'SIGKILL');
            } catch {
              // already gone
            }
          }
        }, 5000);
        await exited;
        clearTimeout(timer);
      }
      return exited;
    },
  };
}

/** A fenced block of a page: its info string's words and its text. */
export interface FencedBlock {
  readonly lang: string;
  /** The words after the language: `server` (long-running), `browser` (prints a URL to open), `file=…`. */
  readonly tags: readonly string[];
  readonly code: string;
}

/** Every fenced block of a Markdown page, in order. */
export function fencedBlocks(markdown: string): FencedBlock[] {
  const blocks: FencedBlock[] = [];
  const pattern = /^```(\S*)([^\n]*)\n([\s\S]*?)^```$/gm;
  for (const match of markdown.matchAll(pattern)) {
    blocks.push({ lang: match[1] ?? '', tags: (match[2] ?? '').trim().split(/\s+/).filter(Boolean), code: match[3] ?? '' });
  }
  return blocks;
}
