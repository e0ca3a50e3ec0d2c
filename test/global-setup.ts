import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestProject } from 'vitest/node';
import { adminPostgresUrl, dropStaleTestDatabases, probePostgres } from './support/postgres.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The admin URL of the test Postgres server, or `''` when Postgres tests are skipped. */
    postgresAdminUrl: string;
    /** A scratch folder of this run under `test/.tmp/`, removed when the run ends (the CLI tests' builds go there). */
    scratchDir: string;
  }
}

/**
 * Decides once per run whether the Postgres suites run. They are required in
 * CI (or with IDT_TEST_REQUIRE_POSTGRES=1) and skipped with a warning
 * elsewhere when no server answers. IDT_TEST_DATABASES=sqlite turns them off.
 */
export default async function setup(project: TestProject) {
  const wanted = (process.env.IDT_TEST_DATABASES ?? 'sqlite,postgres').split(',').map((s) => s.trim());
  const required = process.env.IDT_TEST_REQUIRE_POSTGRES === '1' || process.env.CI === 'true';
  let url = '';
  if (wanted.includes('postgres')) {
    const candidate = adminPostgresUrl();
    const problem = await probePostgres(candidate);
    if (problem === undefined) {
      url = candidate;
      await dropStaleTestDatabases(candidate);
    } else if (required) {
      throw new Error(`Postgres is required for this test run but ${candidate} does not answer: ${problem}`);
    } else {
      console.warn(`\n[idt tests] Postgres at ${candidate} does not answer (${problem}); Postgres suites are skipped.\n`);
    }
  }
  project.provide('postgresAdminUrl', url);
  const tmp = fileURLToPath(new URL('.tmp', import.meta.url));
  mkdirSync(tmp, { recursive: true });
  const scratch = mkdtempSync(join(tmp, 'run-'));
  project.provide('scratchDir', scratch);
  return () => rmSync(scratch, { recursive: true, force: true });
}
