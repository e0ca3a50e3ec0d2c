#!/usr/bin/env node
// `npm start`: build what is stale, apply migrations, and serve the reference
// server on SQLite (./data/idt.sqlite, port 8080) in the Development environment.
// Every setting can be overridden with the variables of docs/configuration.md.
import { spawnSync } from 'node:child_process';
import { isDistStale } from './dist-stale.mjs';

process.env.IDT_ENVIRONMENT ??= 'Development';
process.env.IDT_DATABASE_URL ??= 'sqlite:./data/idt.sqlite';
process.env.PORT ??= '8080';

if (isDistStale()) {
  console.log('Building the packages…');
  const build = spawnSync('npm', ['run', 'build', '--silent'], { stdio: 'inherit' });
  if (build.status !== 0) process.exit(build.status ?? 1);
}

const server = spawnSync(process.execPath, ['examples/server/dist/main.js', 'start'], { stdio: 'inherit' });
process.exit(server.status ?? 1);
