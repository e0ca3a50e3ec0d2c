/**
 * The Node.js flags the reference server runs with: `npm start`
 * (scripts/start.mjs) passes them to the server process, and
 * `npm run bench` runs its idt servers with them (`--server-flags`
 * overrides).
 *
 * `--max-semi-space-size=8`: V8's young generation grows to two 8 MiB
 * semi-spaces rather than two of 16 MiB. Under load the server allocates
 * about 100 KB a request, nearly all of it garbage within the request, so
 * the young generation fills in tens of milliseconds either way; with the
 * smaller one, the process held 12–16 MiB less under load, with no loss
 * of throughput in docs/benchmarks-history.md's measurements (the smaller young
 * generation is collected twice as often, each collection copying as
 * little). The young generation's size is fixed when V8 starts, so it is a
 * command-line flag: a host that embeds idt in its own process chooses its
 * own (docs/configuration.md, *Memory*).
 */
export const SERVER_NODE_FLAGS = Object.freeze(['--max-semi-space-size=8']);
