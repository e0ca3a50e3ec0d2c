#!/usr/bin/env node
// `npm start`: build what is stale, apply migrations, and serve the reference
// server on SQLite (./data/idt.sqlite, port 8080) in the Development environment.
// Every setting can be overridden with the variables of docs/configuration.md.
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

process.env.IDT_ENVIRONMENT ??= 'Development';
process.env.IDT_DATABASE_URL ??= 'sqlite:./data/idt.sqlite';
process.env.PORT ??= '8080';

function newestMtime(dir) {
  let newest = 0;
  if (!existsSync(dir)) return newest;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(path) : statSync(path).mtimeMs);
  }
  return newest;
}

function isStale() {
  for (const group of ['packages', 'examples']) {
    for (const name of readdirSync(group)) {
      const root = join(group, name);
      if (!existsSync(join(root, 'package.json')) || !existsSync(join(root, 'src'))) continue;
      const built = join(root, 'dist', 'index.js');
      if (!existsSync(built) || newestMtime(join(root, 'src')) > statSync(built).mtimeMs) return true;
    }
  }
  return false;
}

if (isStale()) {
  console.log('Building the packages…');
  const build = spawnSync('npm', ['run', 'build', '--silent'], { stdio: 'inherit' });
  if (build.status !== 0) process.exit(build.status ?? 1);
}

const server = spawnSync(process.execPath, ['examples/server/dist/main.js', 'start'], { stdio: 'inherit' });
process.exit(server.status ?? 1);
