import { type ChildProcess, spawn } from 'node:child_process';
import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { loadConfig, resolveKeyEncryptionSecret, systemClock } from '@idt/core';
import { createKnexSigningKeyStore } from '@idt/core/knex';
import {
  createTestDatabase,
  freePort,
  mintAccessToken,
  referenceMigrationSets,
  seedMembership,
  seedOrganization,
  seedUser,
  testDialects,
} from '@idt/testing';
import { Webhook } from 'standardwebhooks';
import { describe, expect, it, vi } from 'vitest';
import { expectJson } from './helpers.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const SERVER = fileURLToPath(new URL('./fixtures/crash-server.ts', import.meta.url));
/** tsx, by absolute URL, as the CLI's spawned tests load it. */
const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;

/**
 * How long a claimed delivery stays reserved for the instance sending it
 * (`LEASE_MS` of src/webhooks/service.ts, which no option changes). The
 * restarted server runs its clock this much (and a second) ahead, standing
 * for a restart that comes after the killed process's leases ran out.
 */
const LEASE_MS = 60_000;
const MESSAGES = 5;
/** Of those, how many get a 500 before the crash (the rest are claimed and in flight when it comes). */
const FAILED_BEFORE_CRASH = 2;

interface Received {
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

/**
 * A local receiver. Until `accept()`: a 500 to the first `failures`
 * requests, then no answer at all (the sender waits, its delivery claimed).
 * After: 204 to everything.
 */
async function startReceiver(failures: number) {
  const beforeCrash: Received[] = [];
  const afterRestart: Received[] = [];
  const held: ServerResponse[] = [];
  let accepting = false;
  let failuresLeft = failures;
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const request = { headers: req.headers, body: Buffer.concat(chunks).toString('utf8') };
      if (accepting) {
        afterRestart.push(request);
        res.writeHead(204).end();
        return;
      }
      beforeCrash.push(request);
      if (failuresLeft > 0) {
        failuresLeft -= 1;
        res.writeHead(500).end();
      } else {
        held.push(res);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    beforeCrash,
    afterRestart,
    held,
    accept() {
      accepting = true;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

interface ServerProcess {
  readonly child: ChildProcess;
  /** Resolves with the signal (or exit code) the process ended with. */
  readonly exited: Promise<NodeJS.Signals | number | null>;
  /** Everything it printed so far. */
  output(): string;
}

/** Spawns the reference server (fixtures/crash-server.ts) and resolves once it listens. */
async function startServer(env: Record<string, string>): Promise<ServerProcess> {
  // Nothing of the runner's own IDT_ settings reaches the child.
  const base = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith('IDT_')));
  const child = spawn(process.execPath, ['--import', TSX, SERVER], {
    cwd: ROOT,
    env: { ...base, TSX_TSCONFIG_PATH: `${ROOT}tsconfig.json`, ...env },
  });
  let output = '';
  const exited = new Promise<NodeJS.Signals | number | null>((resolve) =>
    child.once('exit', (code, signal) => resolve(signal ?? code)),
  );
  const ready = new Promise<void>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString('utf8');
      if (output.includes('listening on ')) resolve();
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    void exited.then((how) => reject(new Error(`the server ended (${how}) before listening:\n${output}`)));
  });
  await ready;
  return { child, exited, output: () => output };
}

describe.each(testDialects())('webhook delivery across a kill -9 on %s', (dialect) => {
  it('delivers every pending message after a restart, at least once and under the same webhook-id', async () => {
    const database = await createTestDatabase(dialect, referenceMigrationSets);
    const receiver = await startReceiver(FAILED_BEFORE_CRASH);
    const port = await freePort();
    const env: Record<string, string> = {
      IDT_ENVIRONMENT: 'Testing',
      IDT_LOG_LEVEL: 'warn',
      IDT_DATABASE_URL: database.url,
      IDT_DATA_DIR: database.dataDir,
      IDT_ISSUER: `http://127.0.0.1:${port}`,
      PORT: String(port),
      HOST: '127.0.0.1',
      ...Object.fromEntries(
        ['AUTH', 'UPLOAD', 'REGISTRATION', 'GLOBAL'].map((policy) => [`IDT_RATE_LIMIT_${policy}_PERMIT_LIMIT`, '100000']),
      ),
    };
    const processes: ServerProcess[] = [];
    try {
      const platform = await seedOrganization(database.db, { name: 'Platform', isPlatform: true });
      const admin = await seedUser(database.db);
      await seedMembership(database.db, { userId: admin.id, organizationId: platform.id, roles: ['owner'] });

      const first = await startServer(env);
      processes.push(first);
      // Minted here as the server mints its tokens: its signing keys (created at its start) and its issuer.
      const config = loadConfig(env);
      const keys = createKnexSigningKeyStore({ db: database.db, secret: resolveKeyEncryptionSecret(config) });
      const target = { idt: { infrastructure: { keys }, clock: systemClock, config }, database };
      const token = await mintAccessToken(target as unknown as Parameters<typeof mintAccessToken>[0], {
        sub: admin.id,
        org_id: platform.id,
      });
      const call = (method: string, path: string, body?: unknown) =>
        fetch(`${config.publicBaseUrl}${path}`, {
          method,
          headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
          ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        });

      const { endpoint, secret } = await expectJson(await call('POST', '/v1/webhooks/endpoints', { url: receiver.url }), 201);
      const sent: string[] = [];
      for (let i = 0; i < MESSAGES; i++) {
        sent.push((await expectJson(await call('POST', `/v1/webhooks/endpoints/${endpoint.id}/test`), 202)).messageId);
      }

      // Every message has reached the receiver once: two were answered 500 (their retry is scheduled),
      // the rest wait for an answer that never comes, claimed by the server.
      const deliveries = () =>
        database
          .db('platform_webhook_deliveries')
          .where({ endpoint_id: endpoint.id })
          .select('message_id', 'status', 'attempts', 'claimed_until');
      await vi.waitFor(
        async () => {
          expect(new Set(receiver.beforeCrash.map((request) => request.headers['webhook-id']))).toEqual(new Set(sent));
          expect((await deliveries()).filter((row) => Number(row.attempts) === 1)).toHaveLength(FAILED_BEFORE_CRASH);
        },
        { timeout: 10_000, interval: 50 },
      );
      const pending = await deliveries();
      expect(pending).toHaveLength(MESSAGES);
      expect(pending.every((row) => row.status === 'pending')).toBe(true);
      expect(pending.filter((row) => row.claimed_until !== null).length).toBeGreaterThanOrEqual(MESSAGES - FAILED_BEFORE_CRASH);
      expect(receiver.held.length).toBeGreaterThanOrEqual(MESSAGES - FAILED_BEFORE_CRASH);

      first.child.kill('SIGKILL');
      expect(await first.exited).toBe('SIGKILL');

      // The receiver recovers; the server comes back on the same database and address, after the leases.
      receiver.accept();
      const second = await startServer({ ...env, CLOCK_AHEAD_MS: String(LEASE_MS + 1_000) });
      processes.push(second);
      await vi.waitFor(
        () => expect(new Set(receiver.afterRestart.map((request) => request.headers['webhook-id']))).toEqual(new Set(sent)),
        { timeout: 15_000, interval: 50 },
      );
      // Every request verifies, before the crash and after; the restarted server's clock is a minute
      // ahead of the wall clock the package checks against, within its 5 min tolerance.
      for (const request of [...receiver.beforeCrash, ...receiver.afterRestart]) {
        expect(new Webhook(secret).verify(request.body, request.headers as Record<string, string>)).toEqual({
          type: 'webhook.test',
          timestamp: expect.any(String),
          data: { endpointId: endpoint.id, message: 'This is a test message from idt.' },
        });
      }
      await vi.waitFor(
        async () => expect((await deliveries()).map((row) => row.status)).toEqual(Array(MESSAGES).fill('succeeded')),
        { timeout: 5_000, interval: 50 },
      );
    } finally {
      for (const { child, exited } of processes) {
        if (child.exitCode === null && child.signalCode === null) {
          child.kill('SIGTERM');
          await exited;
        }
      }
      await receiver.close();
      await database.destroy();
    }
  });
});
