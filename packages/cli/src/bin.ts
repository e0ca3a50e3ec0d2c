#!/usr/bin/env -S node --
// The `--` in the shebang ends node's own options: Node 20 would otherwise
// take `--env-file` anywhere in argv as its own and exit 9 (nodejs/node#54232).
import { run } from './cli.js';

const { exitCode } = await run(process.argv.slice(2), {
  stdin: process.stdin,
  stdout: process.stdout,
  stderr: process.stderr,
  interactive: process.stdin.isTTY === true && process.stderr.isTTY === true,
});
// Exit once standard output is flushed, whatever handles a command left open.
process.stdout.write('', () => process.exit(exitCode));
