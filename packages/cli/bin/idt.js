#!/usr/bin/env -S node --
// The `idt` binary. The `--` in the line above ends node's own options: Node 20
// would otherwise take `--env-file` anywhere in argv as its own and exit 9
// (nodejs/node#54232). This launcher is not built, so npm links it even before
// `npm run build` has made dist/.
try {
  await import('../dist/bin.js');
} catch (error) {
  if (error?.code === 'ERR_MODULE_NOT_FOUND' && String(error.message).includes('dist/bin.js')) {
    console.error('error: @idt/cli is not built; run `npm run build` first.');
    process.exit(1);
  }
  throw error;
}
