/**
 * Summarizes a V8 CPU profile (`node --cpu-prof`): the functions with the
 * most self time, and self time grouped by package / source file.
 *
 *   node bench/profile-summary.mjs <file.cpuprofile> [--top 25]
 *
 * bench/run.mjs --profile calls {@link summarizeProfile} on the profile of
 * every idt server it ran.
 */
import { existsSync, readFileSync } from 'node:fs';
import { SourceMap } from 'node:module';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** Shortens a script URL to `node_modules/<pkg>/…`, `packages/<pkg>/src/…`, `node:…` or the built-in category. */
function shortUrl(url) {
  if (!url) return '';
  let path = url.replace(/^file:\/\//, '');
  if (path.startsWith(ROOT)) path = path.slice(ROOT.length);
  const nm = path.lastIndexOf('node_modules/');
  if (nm >= 0) path = path.slice(nm);
  return path;
}

/** The group a script belongs to: an npm package, an idt package, node internals or V8 (GC, program, idle). */
export function groupOf(url, functionName) {
  if (!url) return `(${functionName.replace(/[()]/g, '') || 'anonymous'})`;
  const path = shortUrl(url);
  const pkg = /^node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path);
  if (pkg) return pkg[1];
  const idt = /^(packages|examples)\/([^/]+)/.exec(path);
  if (idt) return `@idt/${idt[2]}`;
  if (path.startsWith('node:')) return 'node internals';
  return path;
}

/**
 * Maps call frames of bundled scripts (bench/run.mjs --server bundle) back to
 * their sources through the bundle's linked source map, when there is one.
 */
export function createFrameMapper(profileDir) {
  const maps = new Map();
  const mapOf = (url) => {
    if (maps.has(url)) return maps.get(url);
    let map;
    try {
      const file = url.startsWith('file://') ? fileURLToPath(url) : url;
      // Beside the bundle, or (bench/.build/ is removed at exit) copied beside the profile.
      const mapFile = [`${file}.map`, join(profileDir, `${basename(file)}.map`)].find((candidate) => existsSync(candidate));
      if (file.endsWith('.mjs') && mapFile) {
        map = { dir: dirname(file), sourceMap: new SourceMap(JSON.parse(readFileSync(mapFile, 'utf8'))) };
      }
    } catch {
      map = undefined;
    }
    maps.set(url, map);
    return map;
  };
  return (callFrame) => {
    const { url, lineNumber, columnNumber } = callFrame;
    const map = url ? mapOf(url) : undefined;
    if (!map) return callFrame;
    const entry = map.sourceMap.findEntry(lineNumber, columnNumber);
    if (!entry?.originalSource) return callFrame;
    const source = entry.originalSource.startsWith('file://')
      ? entry.originalSource
      : `file://${resolve(map.dir, entry.originalSource)}`;
    return { ...callFrame, url: source, lineNumber: entry.originalLine };
  };
}

/**
 * Reads a `.cpuprofile` and returns the total sampled time and the top
 * entries by self time: per function and per group.
 */
export function summarizeProfile(file, top = 25) {
  const profile = JSON.parse(readFileSync(file, 'utf8'));
  const mapFrame = createFrameMapper(dirname(file));
  for (const node of profile.nodes) node.callFrame = mapFrame(node.callFrame);
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const selfSamples = new Map();
  for (const id of profile.samples) selfSamples.set(id, (selfSamples.get(id) ?? 0) + 1);
  const totalSamples = profile.samples.length || 1;
  const totalMs = (profile.endTime - profile.startTime) / 1000;
  const perSample = totalMs / totalSamples;

  const functions = new Map();
  const groups = new Map();
  for (const [id, count] of selfSamples) {
    const node = byId.get(id);
    if (!node) continue;
    const { functionName, url, lineNumber } = node.callFrame;
    const name = functionName || '(anonymous)';
    const key = `${name} ${shortUrl(url)}${url ? `:${lineNumber + 1}` : ''}`;
    functions.set(key, (functions.get(key) ?? 0) + count);
    const group = groupOf(url, name);
    groups.set(group, (groups.get(group) ?? 0) + count);
  }
  // Total (inclusive) time: every function on the stack of a sample counts once for it.
  const parentOf = new Map();
  for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);
  const inclusive = new Map();
  for (const [id, count] of selfSamples) {
    const seen = new Set();
    for (let current = id; current !== undefined; current = parentOf.get(current)) {
      const node = byId.get(current);
      if (!node?.callFrame.url) continue;
      const { functionName, url, lineNumber } = node.callFrame;
      const key = `${functionName || '(anonymous)'} ${shortUrl(url)}:${lineNumber + 1}`;
      if (seen.has(key)) continue;
      seen.add(key);
      inclusive.set(key, (inclusive.get(key) ?? 0) + count);
    }
  }
  const idtInclusive = new Map([...inclusive].filter(([key]) => / (packages|examples)\//.test(key)));

  const rank = (map) =>
    [...map.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, count]) => ({ name, selfMs: Math.round(count * perSample), share: count / totalSamples }));
  return {
    file,
    totalMs: Math.round(totalMs),
    functions: rank(functions),
    groups: rank(groups),
    idtTotal: rank(idtInclusive),
  };
}

/** Renders a summary as text. */
export function formatProfileSummary(summary) {
  const pct = (share) => `${(share * 100).toFixed(1).padStart(5)}%`;
  const lines = [`CPU profile ${summary.file} (${summary.totalMs} ms sampled)`, '  Self time by package:'];
  for (const entry of summary.groups) lines.push(`    ${pct(entry.share)}  ${entry.name}`);
  lines.push('  Self time by function:');
  for (const entry of summary.functions) lines.push(`    ${pct(entry.share)}  ${entry.name}`);
  lines.push('  Total time (self and callees) of idt functions:');
  for (const entry of summary.idtTotal ?? []) lines.push(`    ${pct(entry.share)}  ${entry.name}`);
  return lines.join('\n');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const file = process.argv[2];
  if (!file) {
    console.error('usage: node bench/profile-summary.mjs <file.cpuprofile> [--top 25]');
    process.exit(2);
  }
  const topIndex = process.argv.indexOf('--top');
  const top = topIndex > 0 ? Number(process.argv[topIndex + 1]) : 25;
  console.log(formatProfileSummary(summarizeProfile(file, top)));
}
