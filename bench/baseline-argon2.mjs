/**
 * The sign-in baseline: argon2id password verification alone, with
 * @node-rs/argon2 (what idt verifies passwords with), `concurrency`
 * verifications in flight, in this one process: bench/run.mjs pins it to the
 * server core, so this is what one core allows. The hash verified is the
 * bench administrator's own stored hash (`hash`), so the parameters are
 * exactly idt's (packages/identity/src/passwords.ts: m=19456 KiB, t=2, p=1);
 * without one, a hash is made here with those parameters. A warm-up, then
 * the measured run; prints one JSON line shaped like bench/load.mjs's.
 *
 *   node bench/baseline-argon2.mjs '<json options>'
 *
 * Options: { hash, password, concurrency, duration, warmup } (seconds).
 */
import { hash as argon2Hash, verify } from '@node-rs/argon2';
import { latencySummary, startCpuMeter } from './cpu.mjs';

const options = JSON.parse(process.argv[2] ?? '{}');
const password = options.password ?? 'correct horse battery staple';
const encoded = options.hash ?? (await argon2Hash(password, { algorithm: 2, memoryCost: 19_456, timeCost: 2, parallelism: 1 }));
if (!(await verify(encoded, password))) {
  console.error('the password does not match the hash');
  process.exit(1);
}
const concurrency = options.concurrency ?? 4;

async function phase(seconds) {
  const deadline = performance.now() + seconds * 1000;
  const latencies = [];
  let failed = 0;
  const worker = async () => {
    while (performance.now() < deadline) {
      const started = performance.now();
      if (await verify(encoded, password)) latencies.push(performance.now() - started);
      else failed++;
    }
  };
  const startedAt = performance.now();
  await Promise.all(Array.from({ length: concurrency }, worker));
  return { latencies, failed, seconds: (performance.now() - startedAt) / 1000 };
}

if ((options.warmup ?? 0) > 0) await phase(options.warmup);
const meter = startCpuMeter(process.pid);
const result = await phase(options.duration ?? 10);
const cpu = meter.stop();
const ok = result.latencies.length;
const total = ok + result.failed;
process.stdout.write(
  `${JSON.stringify({
    requestsPerSecond: ok / result.seconds,
    okPerSecond: ok / result.seconds,
    total,
    failed: result.failed,
    ok,
    non2xx: 0,
    errors: result.failed,
    timeouts: 0,
    failedRatio: total > 0 ? result.failed / total : 1,
    statusCodes: {},
    latency: latencySummary(result.latencies),
    durationSeconds: result.seconds,
    ...(cpu ? { cpu } : {}),
    connections: concurrency,
    parameters: /^\$argon2id\$v=\d+\$([^$]+)\$/.exec(encoded)?.[1],
  })}\n`,
);
