#!/usr/bin/env node
// `npm start`: build what is stale, apply migrations, and serve the reference
// server. On first run it writes the project env file `.env` (git-ignored):
// the Development environment on SQLite (./data/idt.sqlite, port 8080). The
// server and every `npx idt …` command run in this directory read that file,
// so they share the database, the data directory and its secrets. Variables
// set in the environment win over the file (docs/configuration.md).
import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { isDistStale } from './dist-stale.mjs';
import { SERVER_ENV, SERVER_NODE_FLAGS } from './server-flags.mjs';

/** What `npm start` writes to `.env` when the checkout has none. */
export const DEFAULT_PROJECT_ENV = `# The settings of this checkout, read by \`npm start\` and by every \`npx idt …\` command
# run in this directory (written by \`npm start\` on its first run; git-ignored).
# Variables set in the environment win over these. See docs/configuration.md.
IDT_ENVIRONMENT=Development
IDT_DATABASE_URL=sqlite:./data/idt.sqlite
`;

const envFile = resolve(process.env.IDT_ENV_FILE?.trim() || '.env');
if (process.env.IDT_ENV_FILE?.trim() !== 'none' && !existsSync(envFile)) {
  writeFileSync(envFile, DEFAULT_PROJECT_ENV, { flag: 'wx' });
  console.log(`Wrote ${envFile}: IDT_ENVIRONMENT=Development, IDT_DATABASE_URL=sqlite:./data/idt.sqlite (npx idt reads it too).`);
}

if (isDistStale()) {
  console.log('Building the packages…');
  const build = spawnSync('npm', ['run', 'build', '--silent'], { stdio: 'inherit' });
  if (build.status !== 0) process.exit(build.status ?? 1);
}

// `npm start` serves until interrupted: let Ctrl-C reach the server alone, and leave with its exit code.
// The server runs with the reference server's Node.js flags and environment (scripts/server-flags.mjs);
// a variable the environment already sets wins.
const server = spawnSync(process.execPath, [...SERVER_NODE_FLAGS, 'examples/server/dist/main.js', 'start'], {
  stdio: 'inherit',
  env: { ...SERVER_ENV, ...process.env },
});
process.exit(server.status ?? 1);
