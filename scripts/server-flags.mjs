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

/**
 * The environment the reference server starts with, beside its flags;
 * `npm start` sets each variable only where the environment does not
 * already, and `npm run bench` runs its idt servers with it
 * (`--server-env` overrides).
 *
 * `MALLOC_ARENA_MAX=2`: glibc's allocator gives every thread that
 * allocates at once an arena of its own, up to eight per core, and an
 * arena keeps what is freed in it for that thread's next allocation. A
 * Node.js server's threads (libuv's pool signing tokens and running
 * argon2id, V8's compiler and GC workers) each come to hold such an arena;
 * with two arenas they share, the server held about 10 MiB less under load
 * with the same throughput (docs/benchmarks-history.md, twenty-fourth
 * pass). glibc reads the variable when the process starts, so it can only
 * be set from outside; musl's allocator (Alpine images) has no arenas and
 * ignores it.
 */
export const SERVER_ENV = Object.freeze({ MALLOC_ARENA_MAX: '2' });
