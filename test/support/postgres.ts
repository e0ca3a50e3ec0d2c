import pg from 'pg';

/** The admin URL of the Postgres server tests create their throwaway databases on. */
export function adminPostgresUrl(): string {
  return process.env.IDT_TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
}

/** `undefined` when the server answers, else why not. */
export async function probePostgres(url: string): Promise<string | undefined> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 3000 });
  try {
    await client.connect();
    await client.query('select 1');
    return undefined;
  } catch (error) {
    return (error as Error).message;
  } finally {
    await client.end().catch(() => undefined);
  }
}

const PREFIX = 'idt_test_';

/** A fresh database name carrying its creation time, so stale ones can be found. */
export function testDatabaseName(): string {
  return `${PREFIX}${Math.floor(Date.now() / 1000)}_${Math.random().toString(36).slice(2, 10)}`;
}

/** Runs statements against the admin database. */
export async function withAdmin<T>(url: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** Drops throwaway databases that earlier runs left behind (older than two hours). */
export async function dropStaleTestDatabases(url: string): Promise<void> {
  const cutoff = Math.floor(Date.now() / 1000) - 7200;
  await withAdmin(url, async (client) => {
    const { rows } = await client.query<{ datname: string }>('select datname from pg_database where datname like $1', [
      `${PREFIX}%`,
    ]);
    for (const { datname } of rows) {
      const created = Number(datname.slice(PREFIX.length).split('_')[0]);
      if (Number.isFinite(created) && created < cutoff) {
        await client.query(`drop database if exists "${datname}" with (force)`);
      }
    }
  });
}

/** Creates a throwaway database and returns its URL. */
export async function createPostgresDatabase(adminUrl: string): Promise<{ url: string; drop(): Promise<void> }> {
  const name = testDatabaseName();
  await withAdmin(adminUrl, (client) => client.query(`create database "${name}"`));
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return {
    url: url.href,
    drop: () =>
      withAdmin(adminUrl, async (client) => void (await client.query(`drop database if exists "${name}" with (force)`))),
  };
}
