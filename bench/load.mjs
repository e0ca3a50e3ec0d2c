/**
 * The load generator, run by bench/run.mjs as its own process (pinned to
 * another core than the server when taskset exists): a warm-up run, then the
 * measured run, with autocannon. Prints one JSON line with the figures of the
 * measured run.
 *
 *   node bench/load.mjs '<json options>'
 *
 * Options: { url, method, headers, body, connections, duration, warmup,
 * serverPid, authorizationsFile } (durations in seconds). With `serverPid`,
 * the CPU time of the server, of this process and of everything else on the
 * machine during the measured run is reported too (Linux /proc), in cores.
 * With `authorizationsFile` (a JSON array of `Authorization` header values),
 * successive requests of all connections take the next value in turn: the
 * token requests spread over many clients.
 */
import { readFileSync } from 'node:fs';
import autocannon from 'autocannon';
import { startCpuMeter } from './cpu.mjs';

const options = JSON.parse(process.argv[2] ?? '{}');

const authorizations = options.authorizationsFile ? JSON.parse(readFileSync(options.authorizationsFile, 'utf8')) : undefined;
let nextAuthorization = 0;

function run(duration) {
  return autocannon({
    url: options.url,
    method: options.method ?? 'GET',
    headers: options.headers ?? {},
    ...(options.body === undefined ? {} : { body: options.body }),
    ...(authorizations
      ? {
          requests: [
            {
              setupRequest: (request) => {
                const authorization = authorizations[nextAuthorization];
                nextAuthorization = (nextAuthorization + 1) % authorizations.length;
                return { ...request, headers: { ...request.headers, authorization } };
              },
            },
          ],
        }
      : {}),
    connections: options.connections ?? 20,
    pipelining: 1,
    duration,
    timeout: 10,
  });
}

if ((options.warmup ?? 0) > 0) await run(options.warmup);
const meter = startCpuMeter(options.serverPid);
const result = await run(options.duration ?? 10);
const cpu = meter.stop();
const ok = result['2xx'];
// autocannon counts timeouts among errors too.
const failed = result.non2xx + result.errors;
process.stdout.write(
  `${JSON.stringify({
    requestsPerSecond: result.requests.average,
    okPerSecond: ok / result.duration,
    total: result.requests.total,
    failed,
    ok,
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    failedRatio: result.requests.total + result.errors > 0 ? failed / (result.requests.total + result.errors) : 1,
    statusCodes: result.statusCodeStats,
    latency: {
      mean: result.latency.mean,
      p50: result.latency.p50,
      p90: result.latency.p90,
      p99: result.latency.p99,
      max: result.latency.max,
    },
    durationSeconds: result.duration,
    ...(cpu ? { cpu } : {}),
    connections: result.connections,
  })}\n`,
);
