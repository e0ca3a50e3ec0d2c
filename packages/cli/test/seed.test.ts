import { existsSync, readFileSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEMO_ADMIN_EMAIL, seedJsonSchema } from '@idt/cli';
import { createTestDatabase, type TestDatabase, type TestServer, testDialects } from '@idt/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type CliFixture,
  clientCredentials,
  decodeJwt,
  idt,
  jsonOf,
  ROOT,
  readEnvFile,
  startCliFixture,
  testEnv,
} from './support.js';

const PASSWORD = 'correct horse battery staple';

/** A seed with every section; `sa-` ids make service accounts. */
const fullSeed = {
  $schema: '../packages/cli/schema/seed.schema.json',
  admin: { email: 'ada@example.com', password: PASSWORD, firstName: 'Ada', lastName: 'Lovelace', organizationName: 'Acme' },
  organizations: [{ name: 'Globex', enrollmentPolicy: 'approval_required' }, { name: 'Initech' }],
  users: [
    {
      email: 'Bob@Example.com',
      password: PASSWORD,
      firstName: 'Bob',
      lastName: 'Builder',
      memberships: [
        { organization: 'Globex', roles: ['admin'] },
        { organization: 'acme', roles: ['user', 'manager'] },
      ],
    },
    {
      email: 'carol@example.com',
      firstName: 'Carol',
      lastName: 'Danvers',
      memberships: [{ organization: 'initech', roles: ['user'], status: 'pending' }],
    },
  ],
  scopes: [
    { scope: 'reports.read', description: 'Read reports' },
    { scope: 'reports.admin', description: 'Administer reports', platformOnly: true },
  ],
  clients: [
    {
      clientId: 'sa-globex-reporting',
      name: 'Reporting',
      tenantName: 'Globex',
      scopes: ['users.read', 'reports.read', 'reports.admin'],
      envFile: 'reporting.env',
    },
    {
      name: 'Portal',
      redirectUris: ['https://portal.example.com/callback'],
      postLogoutRedirectUris: ['https://portal.example.com/'],
      frontchannelLogoutUri: 'https://portal.example.com/frontchannel-logout',
      scopes: ['openid', 'profile', 'email'],
      envFile: 'portal.env',
    },
    {
      name: 'Intranet',
      tenantName: 'Initech',
      redirectUris: ['http://localhost:4000/callback'],
      scopes: ['openid'],
    },
  ],
};

describe.each(testDialects())('idt seed on %s', (dialect) => {
  let fixture: CliFixture;
  let database: TestDatabase;
  let server: TestServer;
  let dir: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    fixture = await startCliFixture(dialect, 'idt-seed-');
    ({ dir, database, server, env } = fixture);
  });
  afterAll(() => fixture.close());

  const write = (name: string, content: unknown) => {
    const path = join(dir, name);
    writeFileSync(path, typeof content === 'string' ? content : JSON.stringify(content, null, 2));
    return path;
  };
  const count = async (table: string) => Number((await database.db(table).count({ n: '*' }).first())?.n);

  it('refuses an invalid seed file before writing anything, naming every bad field', async () => {
    const invalid = write('invalid.json', {
      admin: {
        email: 'ada@example.com',
        password: PASSWORD,
        firstName: 'Ada',
        lastName: 'L',
        organizationName: 'Acme',
        role: 'x',
      },
      users: [{ email: 'not-an-address', firstName: 'X', lastName: 'Y' }],
      clients: [
        { clientId: 'sa-reporting', name: 'Reporting', scopes: ['users.read'] },
        { name: 'App', scopes: ['openid'] },
      ],
      extra: true,
    });
    const result = await idt(env, ['seed', '--file', invalid]);
    expect(result.exitCode).toBe(1);
    const line = result.stderr.trim();
    expect(line).toMatch(/^error: The seed file invalid\.json is invalid\. .* \(Validation\.Failed\)$/);
    for (const field of [
      'admin.role: Unknown field.',
      'extra: Unknown field.',
      'users[0].email:',
      'clients[0].tenantName:',
      'clients[1].redirectUris:',
    ]) {
      expect(line).toContain(field);
    }
    const json = jsonOf(await idt(env, ['seed', '--file', invalid, '--json']));
    expect(json.error.errors['clients[0].tenantName']).toEqual([
      'A service account is bound to an organization: name it in tenantName.',
    ]);

    const unknownReference = write(
      'unknown-reference.yaml',
      'users:\n  - email: x@example.com\n    firstName: X\n    lastName: Y\n    memberships:\n      - organization: Hooli\n        roles: [user]\n',
    );
    const unknown = await idt(env, ['seed', '--file', unknownReference]);
    expect(unknown.exitCode).toBe(1);
    expect(unknown.stderr).toContain(
      'users[0].memberships[0].organization: No organization "Hooli" exists or is seeded in this file.',
    );

    const broken = write('broken.json', '{ "admin": ');
    const unreadable = await idt(env, ['seed', '--file', broken]);
    expect(unreadable.exitCode).toBe(1);
    expect(unreadable.stderr).toMatch(
      /^error: broken\.json is not valid JSON: line 1, column 11: the file ends before the JSON does\. \(Cli\.SeedFileUnreadable\)\n {2}Fix the file there/,
    );
    expect((await idt(env, ['seed', '--file', join(dir, 'missing.yaml')])).stderr).toContain('(Cli.SeedFileUnreadable)');
    expect((await idt(env, ['seed'])).exitCode).toBe(2);

    expect(await count('identity_users')).toBe(0);
    expect(await server.idt.services.identity.setup.isSetupRequired()).toBe(true);
  });

  it('refuses an env file that exists before creating anything, and organizations without an owner', async () => {
    write('taken.env', 'KEEP=1\n');
    const seed = write('taken.json', {
      organizations: [{ name: 'Umbrella' }],
      clients: [
        {
          name: 'App',
          tenantName: 'Umbrella',
          redirectUris: ['https://a.example.com/cb'],
          scopes: ['openid'],
          envFile: 'taken.env',
        },
      ],
    });
    const taken = await idt(env, ['seed', '--file', seed]);
    expect(taken.exitCode).toBe(1);
    expect(taken.stderr).toContain('taken.env exists; pass --force to overwrite it. (Cli.EnvFileExists)');
    const ownerless = await idt(env, ['seed', '--file', seed, '--force']);
    expect(ownerless.exitCode).toBe(1);
    expect(ownerless.stderr).toContain('run `idt setup` first. (Cli.NoOwner)');
    expect(await count('identity_organizations')).toBe(0);
    expect(readFileSync(join(dir, 'taken.env'), 'utf8')).toBe('KEEP=1\n');
  });

  it('applies a JSON seed through the services, then changes nothing the second time and says so', async () => {
    const seed = write('seed.json', fullSeed);
    const first = await idt(env, ['seed', '--file', seed]);
    expect(first.stderr).toBe(
      'Creating the first administrator ada@example.com (hashing the password)…\nCreating users (hashing passwords)…\n',
    );
    expect(first.exitCode).toBe(0);
    expect(first.stdout).toContain('created    admin         ada@example.com  (owner of the platform organization Acme)');
    expect(first.stdout).toContain('created    membership    carol@example.com in Initech  (pending approval)');
    expect(first.stdout).toContain('created    client        sa-globex-reporting  (service account, Globex)');
    expect(first.stdout).toContain('created    client        portal  (application, first-party, no organization)');
    expect(first.stdout).toContain('Secrets of the new clients, shown only now');
    expect(first.stdout).toMatch(/^ {2}initech-intranet {2}\S{43}$/m);
    expect(first.stdout).toContain('Seed applied: 13 created, 0 updated, 0 unchanged, 0 skipped.');
    expect(first.stdout).toMatch(/^ {2}organizations: +2 created$/m);
    expect(first.stdout).toMatch(/^ {2}clients: +3 created$/m);

    // The bootstrap ended setup mode; organizations belong to the administrator.
    const { operator } = server.idt.services.identity.accounts;
    expect(await operator.findOrganization('Acme')).toMatchObject({ isPlatform: true });
    expect(await operator.platformOwner()).toBe((await operator.findUserByEmail('ada@example.com'))?.id);
    const globex = await operator.findOrganization('Globex');
    expect(globex).toMatchObject({ slug: 'globex', enrollmentPolicy: 'approval_required', isPlatform: false });
    const admin = await operator.findUserByEmail('ada@example.com');
    const adminActor = { userId: admin?.id ?? '', organizationId: globex?.id ?? '', permissions: new Set(['UsersRead']) };
    const members = await server.idt.services.identity.accounts.memberships.list(adminActor, globex?.id ?? '');
    expect(members.items.map((member) => [member.email, member.status, member.roles])).toEqual([
      ['ada@example.com', 'active', ['owner']],
      ['bob@example.com', 'active', ['admin']],
    ]);
    const initech = await operator.findOrganization('initech');
    const carol = await operator.findUserByEmail('carol@example.com');
    expect(
      await database.db('identity_memberships').where({ user_id: carol?.id, organization_id: initech?.id }).first(),
    ).toMatchObject({
      status: 'pending',
    });
    // Bob signs in with his password; Carol has none anyone knows.
    expect(await server.idt.services.identity.signIn.authenticate('bob@example.com', PASSWORD)).toBe(
      (await operator.findUserByEmail('bob@example.com'))?.id,
    );

    // The same events as the HTTP API: registrations, the organization, the members, delivered before exit.
    const events = await database.db('core_outbox_events').select('type');
    expect(events.map((event) => event.type)).toEqual(
      expect.arrayContaining([
        'UserRegisteredEvent',
        'OrganizationCreatedEvent',
        'MemberJoinedEvent',
        'MembershipRequestedEvent',
      ]),
    );

    const clients = server.idt.services.oidc.clients;
    expect(await clients.get(undefined, 'portal')).toMatchObject({
      organizationId: null,
      firstParty: true,
      frontchannelLogoutUri: 'https://portal.example.com/frontchannel-logout',
    });
    expect(await clients.get(undefined, 'initech-intranet')).toMatchObject({ organizationId: initech?.id, firstParty: true });
    expect(await clients.get(undefined, 'sa-globex-reporting')).toMatchObject({
      organizationId: globex?.id,
      kind: 'service-account',
      firstParty: false,
      scopes: ['users.read', 'reports.read', 'reports.admin'],
    });
    expect((await clients.scopes()).find((row) => row.scope === 'reports.admin')).toMatchObject({ platformOnly: true });

    // The service account's env file alone gets a token bound to its tenant.
    const reportingEnv = join(dir, 'reporting.env');
    expect(statSync(reportingEnv).mode & 0o777).toBe(0o600);
    const tokens = await clientCredentials(readEnvFile(reportingEnv), 'users.read reports.admin');
    expect(decodeJwt(tokens.access_token)).toMatchObject({
      sub: 'sa-globex-reporting',
      org_id: globex?.id,
      scope: 'users.read reports.admin',
    });
    expect(readEnvFile(join(dir, 'portal.env'))).toMatchObject({ OIDC_CLIENT_ID: 'portal', OIDC_SCOPES: 'openid profile email' });

    // Second run: nothing changes, no secret is shown, no env file is written.
    unlinkSync(join(dir, 'portal.env'));
    const portalBefore = await clients.findStored('portal');
    const second = await idt(env, ['seed', '--file', seed, '--json']);
    expect(second.exitCode).toBe(0);
    const report = jsonOf(second);
    expect(report).toMatchObject({ ok: true, changed: false, clients: [] });
    expect(new Set(report.steps.map((step: { outcome: string }) => step.outcome))).toEqual(new Set(['unchanged']));
    expect(report.steps).toContainEqual({
      type: 'admin',
      name: 'ada@example.com',
      outcome: 'unchanged',
      detail: 'setup is already complete',
    });
    expect(existsSync(join(dir, 'portal.env'))).toBe(false);
    expect(await clients.findStored('portal')).toEqual(portalBefore);
    const human = await idt(env, ['seed', '--file', seed]);
    expect(human.stdout).toContain('Nothing changed: everything in seed.json is already in place.');
    expect(human.stdout).not.toContain('Secrets');
  });

  it('reads YAML with environment placeholders, updates changed scope rows, and writes --env-file for its one client', async () => {
    const yaml = write(
      'more.yaml',
      `admin:
  email: ada@example.com
  password: \${SEED_ADMIN_PASSWORD}
  firstName: Ada
  lastName: Lovelace
  organizationName: Acme
users:
  - email: dave@example.com
    password: \${SEED_DAVE_PASSWORD}
    firstName: Dave
    lastName: Bowman
    memberships:
      - { organization: Globex, roles: [manager] }
scopes:
  - { scope: reports.read, description: Read every report }
clients:
  - { name: Exporter, kind: service-account, tenantName: globex, scopes: [reports.read] }
`,
    );
    const missing = await idt(env, ['seed', '--file', yaml]);
    expect(missing.exitCode).toBe(1);
    expect(missing.stderr).toContain('admin.password: The environment variable SEED_ADMIN_PASSWORD is not set.');

    const withSecrets = { ...env, SEED_ADMIN_PASSWORD: PASSWORD, SEED_DAVE_PASSWORD: 'open the pod bay doors' };
    const envFile = join(dir, 'exporter.env');
    const result = await idt(withSecrets, ['seed', '--file', yaml, '--env-file', envFile, '--json']);
    expect(result.exitCode).toBe(0);
    const report = jsonOf(result);
    expect(report.steps).toEqual(
      expect.arrayContaining([
        { type: 'admin', name: 'ada@example.com', outcome: 'unchanged', detail: 'setup is already complete' },
        { type: 'scope', name: 'reports.read', outcome: 'updated' },
        expect.objectContaining({ type: 'user', name: 'dave@example.com', outcome: 'created' }),
        expect.objectContaining({ type: 'client', name: 'sa-globex-exporter', outcome: 'created' }),
      ]),
    );
    expect(report.clients).toEqual([
      expect.objectContaining({
        clientId: 'sa-globex-exporter',
        kind: 'service-account',
        envFile,
        clientSecret: expect.any(String),
      }),
    ]);
    expect(readEnvFile(envFile).OIDC_SERVICE_CLIENT_SECRET).toBe(report.clients[0].clientSecret);
    expect((await server.idt.services.oidc.clients.scopes()).find((row) => row.scope === 'reports.read')?.description).toBe(
      'Read every report',
    );
    expect(await server.idt.services.identity.signIn.authenticate('dave@example.com', 'open the pod bay doors')).toEqual(
      expect.any(String),
    );
    const again = await idt(withSecrets, ['seed', '--file', yaml, '--env-file', envFile]);
    expect(again.stdout).toContain('Nothing changed: everything in more.yaml is already in place.');
  });

  it('names an unknown role, and a scope that is no scope row, before writing', async () => {
    const role = write('refused-role.json', {
      users: [
        {
          email: 'erin@example.com',
          firstName: 'Erin',
          lastName: 'Example',
          memberships: [{ organization: 'Globex', roles: ['wizard'] }],
        },
      ],
    });
    const refusedRole = await idt(env, ['seed', '--file', role]);
    expect(refusedRole.exitCode).toBe(1);
    expect(refusedRole.stderr).toContain(
      'error: The seed names roles that do not exist. users[0].memberships[0].roles[0]: No role named "wizard" exists in the organization Globex: use owner, admin, manager, user or one of its custom roles. (Validation.Failed)',
    );
    const scope = write('refused-scope.json', {
      clients: [{ name: 'Odd', kind: 'service-account', tenantName: 'Globex', scopes: ['no.such.scope'] }],
    });
    expect(jsonOf(await idt(env, ['seed', '--file', scope, '--json'])).error).toEqual({
      code: 'Validation.Failed',
      detail: 'The seed names scopes that do not exist.',
      errors: {
        'clients[0].scopes': [
          'Unknown scope "no.such.scope": add it to the scopes section of the file, or use a scope of the catalog.',
        ],
      },
    });
  });

  /** The row count of every table of the database: what "left as it was" compares. */
  const rowCounts = async (): Promise<Record<string, number>> => {
    const tables: string[] =
      dialect === 'sqlite'
        ? await database.db('sqlite_master').where({ type: 'table' }).whereNot('name', 'like', 'sqlite_%').pluck('name')
        : await database.db('pg_tables').whereRaw('schemaname = current_schema()').pluck('tablename');
    const counts: Record<string, number> = {};
    for (const table of tables.sort()) counts[table] = await count(table);
    return counts;
  };

  it('checks every scope before writing: an unknown scope leaves every table as it was and writes no env file', async () => {
    const before = await rowCounts();
    expect(Object.keys(before)).toEqual(expect.arrayContaining(['identity_organizations', 'identity_users', 'oidc_clients']));
    const seed = write('unknown-scope.yaml', {
      organizations: [{ name: 'Hooli' }],
      users: [
        {
          email: 'gavin@example.com',
          firstName: 'Gavin',
          lastName: 'Belson',
          memberships: [{ organization: 'Hooli', roles: ['admin'] }],
        },
      ],
      scopes: [{ scope: 'reports.export', description: 'Export reports' }],
      clients: [
        {
          name: 'Reports',
          kind: 'service-account',
          tenantName: 'Hooli',
          scopes: ['reports.export', 'reports.write'],
          envFile: 'hooli.env',
        },
      ],
    });
    const result = await idt(env, ['seed', '--file', seed]);
    expect(result.exitCode).toBe(1);
    expect(result.stderr).toBe(
      'error: The seed names scopes that do not exist. clients[0].scopes: Unknown scope "reports.write": add it to the scopes section of the file, or use a scope of the catalog. (Validation.Failed)\n',
    );
    expect(await rowCounts()).toEqual(before);
    expect(existsSync(join(dir, 'hooli.env'))).toBe(false);
  });

  it('reports every fault of a file in one run: schema, unknown organization, role and scope; nothing written', async () => {
    const before = await rowCounts();
    const seed = write(
      'many-faults.yaml',
      [
        'organizations:',
        '  - name: Hooli',
        '    colour: green', // schema: an unknown field
        'users:',
        '  - email: not-an-address', // schema: not an e-mail address
        '    firstName: Gavin',
        '    lastName: Belson',
        '    memberships:',
        '      - organization: Globex',
        '        roles: [admin, wizard]', // Globex exists, without a custom role "wizard"
        '      - organization: Initrode', // neither exists nor is seeded
        '        roles: [user]',
        '      - organization: Hooli', // seeded here: built-in roles only
        '        roles: [overlord]',
        'clients:',
        '  - name: Reports',
        '    kind: service-account',
        '    tenantName: Globex',
        '    scopes: [users.read, reports.nope]', // no such scope row
        '',
      ].join('\n'),
    );
    const result = await idt(env, ['seed', '--file', seed, '--json']);
    expect(result.exitCode).toBe(1);
    const { error } = jsonOf(result);
    expect(error.code).toBe('Validation.Failed');
    expect(error.detail).toBe('The seed file many-faults.yaml is invalid.');
    expect(error.errors).toEqual({
      'organizations[0].colour': ['Unknown field.'],
      'users[0].email': [expect.any(String)],
      'users[0].memberships[0].roles[1]': [
        'No role named "wizard" exists in the organization Globex: use owner, admin, manager, user or one of its custom roles.',
      ],
      'users[0].memberships[1].organization': ['No organization "Initrode" exists or is seeded in this file.'],
      'users[0].memberships[2].roles[0]': [
        'No role named "overlord" exists in the organization Hooli: use owner, admin, manager, user.',
      ],
      'clients[0].scopes': [
        'Unknown scope "reports.nope": add it to the scopes section of the file, or use a scope of the catalog.',
      ],
    });
    // The human line names them all too, once, and nothing else.
    const human = await idt(env, ['seed', '--file', seed]);
    expect(human.stderr.split('\n').filter(Boolean)).toHaveLength(1);
    for (const field of Object.keys(error.errors)) expect(human.stderr).toContain(`${field}:`);
    expect(await rowCounts()).toEqual(before);

    // The same references in a file the schema accepts: refused before any write, all at once.
    const valid = write('references.json', {
      users: [
        {
          email: 'gavin@example.com',
          firstName: 'Gavin',
          lastName: 'Belson',
          memberships: [
            { organization: 'Globex', roles: ['wizard'] },
            { organization: 'Initrode', roles: ['user'] },
          ],
        },
      ],
      clients: [{ name: 'Reports', kind: 'service-account', tenantName: 'Globex', scopes: ['reports.nope'] }],
    });
    const references = await idt(env, ['seed', '--file', valid, '--json']);
    expect(jsonOf(references).error).toMatchObject({
      code: 'Validation.Failed',
      detail: 'The seed names organizations, roles and scopes that do not exist.',
    });
    expect(Object.keys(jsonOf(references).error.errors).sort()).toEqual([
      'clients[0].scopes',
      'users[0].memberships[0].roles[0]',
      'users[0].memberships[1].organization',
    ]);
    expect(await rowCounts()).toEqual(before);
  });

  it('names the line and the column of a YAML or JSON syntax error, as an editor shows them', async () => {
    const cases: Array<[string, string, string]> = [
      // The yaml library puts this one at the start of the indentation; the fault is the key after it.
      [
        'indent.yaml',
        'users:\n  - email: ada@example.com\n    firstName: Ada\n   lastName: Lovelace\n',
        'indent.yaml is not valid YAML: line 4, column 4: Sequence item without - indicator.',
      ],
      // ... and this one at the end of the file; the fault is the quote that is never closed.
      [
        'quote.yaml',
        'organizations:\n  - name: "Globex\n    enrollmentPolicy: open\n',
        'quote.yaml is not valid YAML: line 2, column 11: Missing closing "quote.',
      ],
      [
        'compact.yaml',
        'organizations:\n  - name: Foo: Bar\n',
        'compact.yaml is not valid YAML: line 2, column 11: Nested mappings are not allowed in compact mappings.',
      ],
      ['comma.json', '{\n  "admin": ,\n}\n', "comma.json is not valid JSON: line 2, column 12: Unexpected token ','."],
      ['end.json', '{\n  "users": [\n', 'end.json is not valid JSON: line 2, column 13: the file ends before the JSON does.'],
    ];
    for (const [name, content, message] of cases) {
      const result = await idt(env, ['seed', '--file', write(name, content)]);
      expect(result.exitCode).toBe(1);
      const [line, ...hints] = result.stderr.trimEnd().split('\n');
      expect(line).toContain(`error: ${message}`);
      expect(line).toMatch(/\(Cli\.SeedFileUnreadable\)$/);
      expect(hints).toEqual(['  Fix the file there (line and column as your editor shows them) and run the command again.']);
    }
  });

  it('applies a seed in one transaction: an entry refused half-way leaves every table as it was', async () => {
    const { operator } = server.idt.services.identity.accounts;
    const globex = await operator.findOrganization('Globex');
    // A client elsewhere already holds the id the seed's new client derives, which only registering finds out.
    await server.idt.services.oidc.clients.register(
      { userId: null, platformAdmin: true },
      globex?.id ?? null,
      { kind: 'service-account', name: 'Squatter', scopes: ['users.read'] },
      { clientId: 'sa-pied-piper-compression' },
    );
    const before = await rowCounts();
    // Scopes, the organization, the user and the membership are written before the client is refused.
    const seed = write('half-way.json', {
      organizations: [{ name: 'Pied Piper' }],
      users: [
        {
          email: 'richard@example.com',
          password: PASSWORD,
          firstName: 'Richard',
          lastName: 'Hendricks',
          memberships: [{ organization: 'Pied Piper', roles: ['admin'] }],
        },
      ],
      scopes: [{ scope: 'compression.read', description: 'Read compression ratios' }],
      clients: [{ name: 'Compression', kind: 'service-account', tenantName: 'Pied Piper', scopes: ['compression.read'] }],
    });
    const result = await idt(env, ['seed', '--file', seed, '--json']);
    expect(result.exitCode).toBe(1);
    expect(jsonOf(result).error).toMatchObject({ code: 'Clients.IdTaken', detail: expect.stringContaining('clients[0]') });
    expect(result.stderr).not.toMatch(/\n\s+at /);
    expect(await rowCounts()).toEqual(before);
    expect(await operator.findOrganization('Pied Piper')).toBeUndefined();
    expect(await operator.findUserByEmail('richard@example.com')).toBeUndefined();

    // Fixed, the same file applies completely, and the report counts per kind.
    write('half-way.json', {
      ...JSON.parse(readFileSync(seed, 'utf8')),
      clients: [
        {
          clientId: 'sa-pied-piper-compressor',
          name: 'Compression',
          tenantName: 'Pied Piper',
          scopes: ['compression.read'],
        },
      ],
    });
    const fixed = await idt(env, ['seed', '--file', seed, '--json']);
    expect(fixed.exitCode).toBe(0);
    expect(jsonOf(fixed).counts).toEqual({
      scope: { created: 1, updated: 0, unchanged: 0, skipped: 0 },
      organization: { created: 1, updated: 0, unchanged: 0, skipped: 0 },
      user: { created: 1, updated: 0, unchanged: 0, skipped: 0 },
      membership: { created: 1, updated: 0, unchanged: 0, skipped: 0 },
      client: { created: 1, updated: 0, unchanged: 0, skipped: 0 },
    });
    const human = await idt(env, ['seed', '--file', seed]);
    expect(human.stdout).toContain('Nothing changed');
  });

  it('refuses --env-file when several clients of the seed name no envFile', async () => {
    const seed = write('two.json', {
      clients: [
        { name: 'One', kind: 'service-account', tenantName: 'Globex', scopes: ['users.read'] },
        { name: 'Two', kind: 'service-account', tenantName: 'Globex', scopes: ['users.read'] },
      ],
    });
    const result = await idt(env, ['seed', '--file', seed, '--env-file', join(dir, 'one.env')]);
    expect(result.exitCode).toBe(2);
    expect(result.stderr).toContain('2 clients of the seed name no envFile');
  });

  it('seeds the demo once: organization, administrator, dashboard and service account with their env files', async () => {
    const demoDatabase = await createTestDatabase(dialect);
    try {
      const demoEnv = testEnv(demoDatabase.url, dir, { IDT_ISSUER: 'http://localhost:8080' });
      const demoDir = join(dir, `demo-${dialect}`);
      const first = await idt(demoEnv, ['demo', '--dir', demoDir]);
      expect(first.exitCode).toBe(0);
      const password = /Password: +(\S+)/.exec(first.stdout)?.[1];
      expect(password).toEqual(expect.any(String));
      expect(first.stdout).toContain(`E-mail:    ${DEMO_ADMIN_EMAIL}`);
      // Not lost: kept beside the env files, for this user alone.
      expect(readFileSync(join(demoDir, 'admin-password'), 'utf8').trim()).toBe(password);
      expect(statSync(join(demoDir, 'admin-password')).mode & 0o777).toBe(0o600);
      expect(readEnvFile(join(demoDir, 'cli.env'))).toMatchObject({
        OIDC_CLIENT_ID: 'demo-command-line',
        OIDC_REDIRECT_URI: 'http://127.0.0.1:8765/callback',
      });
      expect(readEnvFile(join(demoDir, 'dashboard.env'))).toMatchObject({
        OIDC_ISSUER: 'http://localhost:8080',
        OIDC_CLIENT_ID: 'demo-dashboard',
        OIDC_REDIRECT_URI: 'http://localhost:3000/bff/callback',
        OIDC_POST_LOGOUT_REDIRECT_URI: 'http://localhost:3000/',
      });
      expect(readEnvFile(join(demoDir, 'service.env'))).toMatchObject({ OIDC_SERVICE_CLIENT_ID: 'sa-demo-service' });
      expect(statSync(join(demoDir, 'dashboard.env')).mode & 0o777).toBe(0o600);

      const second = await idt(demoEnv, ['demo', '--dir', demoDir, '--json']);
      expect(second.exitCode).toBe(0);
      expect(jsonOf(second)).toMatchObject({ ok: true, changed: false, clients: [] });
      expect(jsonOf(second).admin).toBeUndefined();
    } finally {
      await demoDatabase.destroy();
    }
  });
});

describe('the seed file JSON Schema', () => {
  it('is the one the zod schema generates', () => {
    const shipped = JSON.parse(readFileSync(join(ROOT, 'packages/cli/schema/seed.schema.json'), 'utf8'));
    expect(shipped).toEqual(seedJsonSchema());
  });
});
