/**
 * docs/quickstart.md as written, from a fresh `git clone` of this checkout in
 * a temporary directory: every `sh` block in order, in one shell session (its
 * variables and working directory carry over, as in a terminal), the
 * `server` block in a second one, the `browser` block's URL opened in
 * headless Chromium to sign in, and the API called with the resulting token.
 *
 * Three substitutions, which the page states: `<repository-url>` is this
 * checkout; `npm install` is replaced by links into this checkout's
 * node_modules and a build without type declarations (a full install and
 * build take minutes, over this test's budget); port 8080 is a free port.
 *
 * Also: `npm start` then `npx idt setup`, `npx idt seed` and `npx idt
 * register-client --env-out` in the same fresh checkout, with no environment
 * beyond a terminal's (PATH, HOME; PORT for `npm start` alone).
 */
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  realpathSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { isBuiltin } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '@idt/testing';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SERVER_BUNDLE_EXTERNAL_IMPORT } from '../scripts/server-bundle.mjs';
import { SERVER_ENV, SERVER_NODE_FLAGS } from '../scripts/server-flags.mjs';
import {
  buildWithoutTypes,
  cleanEnv,
  cloneRepository,
  copyBuild,
  fencedBlocks,
  linkNodeModules,
  ROOT,
  type Started,
  startBash,
} from './quickstart-support.js';

const CHROMIUM = '/usr/bin/chromium';
const SHOTS = join(ROOT, 'test-results', 'quickstart');
/** The redirect URI of the demo's command-line application, where `idt sign-in` listens. */
const CALLBACK = 'http://127.0.0.1:8765/callback';
/** A JWT. */
const JWT = /^eyJ[\w-]+\.eyJ[\w-]+\.[\w-]+$/;

/** Follows the provider's pages (sign-in form, consent, organization) until the browser is at the callback. */
async function signInThrough(page: Page, email: string, password: string): Promise<void> {
  for (let step = 0; step < 6 && !page.url().startsWith(CALLBACK); step++) {
    if (await page.locator('input[name="password"]').count()) {
      await page.screenshot({ path: join(SHOTS, 'sign-in.png') });
      await page.fill('input[name="email"]', email);
      await page.fill('input[name="password"]', password);
      await Promise.all([page.waitForNavigation(), page.locator('form[action$="/login"] button[type="submit"]').first().click()]);
    } else if (await page.locator('form[action$="/consent"]').count()) {
      await page.screenshot({ path: join(SHOTS, 'consent.png') });
      await Promise.all([page.waitForNavigation(), page.locator('form[action$="/consent"] button[value="approve"]').click()]);
    } else if (await page.locator('form[action$="/organization"]').count()) {
      await Promise.all([page.waitForNavigation(), page.locator('form[action$="/organization"] button').first().click()]);
    } else {
      throw new Error(`Unexpected page at ${page.url()}:\n${(await page.content()).slice(0, 2000)}`);
    }
  }
  await page.waitForURL(`${CALLBACK}?**`);
}

/** The working directory a session ended in: the last line of its state file. */
function stateCwd(stateFile: string): string {
  const last = readFileSync(stateFile, 'utf8').trim().split('\n').at(-1) ?? '';
  const match = /^cd (.+)$/.exec(last);
  if (!match?.[1]) throw new Error(`No working directory in ${stateFile}`);
  return match[1].replace(/^'(.*)'$/, '$1');
}

// Skipped on a developer machine without Chromium; in CI a missing browser fails the run.
describe.skipIf(!existsSync(CHROMIUM) && !process.env.CI)('the quick start, from a fresh clone', () => {
  let scratch: string;
  /** A clone of this commit, built once; the tests copy its dist/. */
  let template: string;
  let browser: Browser;
  const running: Started[] = [];

  beforeAll(async () => {
    scratch = mkdtempSync(join(tmpdir(), 'idt-quickstart-'));
    template = cloneRepository(scratch, 'template');
    linkNodeModules(template);
    buildWithoutTypes(template);
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
    });
    mkdirSync(SHOTS, { recursive: true });
  }, 120_000);

  afterAll(async () => {
    for (const started of running) await started.stop();
    await browser?.close();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  it('runs docs/quickstart.md as written: demo, serve, sign in in the browser, call the API, register a client', async () => {
    const page = readFileSync(join(ROOT, 'docs', 'quickstart.md'), 'utf8');
    const blocks = fencedBlocks(page).filter((block) => block.lang === 'sh');
    expect(blocks.length).toBeGreaterThanOrEqual(6);
    const port = await freePort();
    const home = join(scratch, 'home');
    mkdirSync(home);
    const env = cleanEnv({ PORT: String(port) });
    const stateFile = join(scratch, 'session.sh');
    writeFileSync(stateFile, `cd '${scratch}'\n`);
    const outputs: string[] = [];
    let signedIn = false;

    for (const block of blocks) {
      const code = block.code
        .replaceAll('<repository-url>', ROOT)
        .replaceAll('localhost:8080', `localhost:${port}`)
        .replace(/^npm install$/m, ': npm install, done by the test');
      const prologue = `set -ea\n. '${stateFile}'\n`;
      const epilogue = `\n{ export -p; printf 'cd %q\\n' "$PWD"; } > '${stateFile}'\n`;
      if (block.tags.includes('server')) {
        const server = startBash(`${prologue}exec ${code.trim()}`, scratch, env);
        running.push(server);
        await server.waitFor(/Setup required: (yes|no)/, 30_000);
        outputs.push(server.output());
        expect(server.output()).toContain(`listening on http://localhost:${port}`);
        continue;
      }
      const shell = startBash(`${prologue}${code}${epilogue}`, scratch, env);
      running.push(shell);
      if (block.tags.includes('browser')) {
        const [, url = ''] = await shell.waitFor(/Open this URL in a browser and sign in:\s+(\S+)/, 30_000);
        expect(url.startsWith(`http://localhost:${port}/`)).toBe(true);
        const context = await browser.newContext();
        const tab = await context.newPage();
        await tab.goto(url);
        const cwd = stateCwd(stateFile);
        const password = readFileSync(join(cwd, 'data', 'demo', 'admin-password'), 'utf8').trim();
        await signInThrough(tab, 'demo@example.com', password);
        expect(await tab.locator('#result').textContent()).toContain('You are signed in');
        await tab.screenshot({ path: join(SHOTS, 'signed-in.png') });
        await context.close();
        signedIn = true;
      }
      const code_ = await shell.exited;
      outputs.push(shell.output());
      if (code_ !== 0) throw new Error(`This block of docs/quickstart.md exited ${code_}:\n${code}\n${shell.output()}`);
      // `npm install`: the dependencies of this checkout, and the build of the template clone (same commit).
      if (/^npm install$/m.test(block.code)) {
        const clone = stateCwd(stateFile);
        linkNodeModules(clone);
        copyBuild(template, clone);
      }
    }
    expect(signedIn).toBe(true);
    const all = outputs.join('\n');
    // The demo printed the commands the page runs next.
    expect(all).toContain('npx idt sign-in --from data/demo/cli.env');
    expect(all).toContain('Saved in:  data/demo/admin-password');
    // The token signed in through the browser is the demo administrator's, and the API answered with them.
    const session = readFileSync(stateFile, 'utf8');
    const token = /declare -x TOKEN="([^"]+)"/.exec(session)?.[1] ?? '';
    expect(token).toMatch(JWT);
    expect(all).toContain('"email":"demo@example.com"');
    // The service account registered last called the API with its own token.
    expect(all).toContain('Registered service account sa-demo-reports');
    expect(outputs.at(-1)).toContain('"email":"demo@example.com"');
  }, 120_000);

  it('npm start, then npx idt setup, seed and register-client in the same checkout, with no extra environment', async () => {
    const checkout = cloneRepository(scratch, 'checkout');
    linkNodeModules(checkout);
    copyBuild(template, checkout);
    const port = await freePort();
    const server = startBash('exec npm start', checkout, cleanEnv({ PORT: String(port) }));
    running.push(server);
    await server.waitFor(/Setup required: yes/, 40_000);
    expect(readFileSync(join(checkout, '.env'), 'utf8')).toContain('IDT_ENVIRONMENT=Development');
    // The server process runs with the reference server's Node.js flags and environment (scripts/server-flags.mjs).
    const servers = serverProcesses(checkout);
    expect(servers.map((server) => server.argv)).toEqual([[...SERVER_NODE_FLAGS, 'examples/server/dist/main.js', 'start']]);
    expect(servers[0]?.env).toMatchObject(SERVER_ENV);
    // That program is one file holding its npm dependencies (scripts/server-bundle.mjs).
    expect(unbundledImports(join(checkout, 'examples/server/dist/main.js'))).toEqual([]);

    const terminal = cleanEnv();
    const run = async (script: string) => {
      const shell = startBash(script, checkout, terminal);
      const code = await shell.exited;
      return { code, output: shell.output() };
    };
    const setup = await run(
      "printf '%s\\n' 'correct horse battery staple' | npx idt setup --email ada@example.com --password-stdin --first-name Ada --last-name Lovelace --organization Acme",
    );
    expect(setup, setup.output).toMatchObject({ code: 0 });
    writeFileSync(
      join(checkout, 'seed.yaml'),
      'organizations:\n  - name: Research\nusers:\n  - email: grace@example.com\n    firstName: Grace\n    lastName: Hopper\n    memberships:\n      - organization: Research\n        roles: [user]\n',
    );
    const seed = await run('npx idt seed --file seed.yaml');
    expect(seed, seed.output).toMatchObject({ code: 0 });
    const register = await run(
      'npx idt register-client --org Acme --kind service-account --name Reporting --scope users.read --env-out reporting.env',
    );
    expect(register, register.output).toMatchObject({ code: 0 });
    // The server the CLI wrote to is the one npm start serves: setup is complete there, and the new client gets a token.
    const status = await fetch(`http://localhost:${port}/v1/identity/setup/status`);
    expect(await status.json()).toEqual({ setupRequired: false });
    const env = readFileSync(join(checkout, 'reporting.env'), 'utf8');
    expect(env).toContain('OIDC_SERVICE_CLIENT_ID=sa-acme-reporting');
    await server.stop();
  }, 90_000);
});

/**
 * What a bundle imports or requires besides Node.js built-ins and the modules
 * left out of it on purpose ({@link SERVER_BUNDLE_EXTERNAL_IMPORT}). esbuild writes
 * an ES module's static imports as statements (several to a line once
 * minified), a dynamic one as `import("…")`, and a CommonJS module's
 * requires as calls with the module's name, always in double quotes.
 */
function unbundledImports(file: string): string[] {
  const code = readFileSync(file, 'utf8');
  const specifiers = new Set<string>();
  const patterns = [
    /(?:^|[;\n}])\s*import\s*(?:[\w$*{}\s,]+?from\s*)?"([^"]+)"/g,
    /\bimport\(\s*"([^"]+)"\s*\)/g,
    /(?:\b|__)require\(\s*"([^"]+)"\s*\)/g,
  ];
  for (const pattern of patterns) for (const match of code.matchAll(pattern)) specifiers.add(match[1] ?? '');
  return [...specifiers].filter((specifier) => !isBuiltin(specifier) && !SERVER_BUNDLE_EXTERNAL_IMPORT.test(specifier)).sort();
}

/** The arguments of node and the environment of the reference server processes running in `dir` (Linux's /proc). */
function serverProcesses(dir: string): Array<{ argv: string[]; env: Record<string, string> }> {
  const cwd = realpathSync(dir);
  const found: Array<{ argv: string[]; env: Record<string, string> }> = [];
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean);
      if (!argv.includes('examples/server/dist/main.js') || readlinkSync(`/proc/${pid}/cwd`) !== cwd) continue;
      const variables = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0').filter(Boolean);
      const env = Object.fromEntries(
        variables.map((entry) => [entry.slice(0, entry.indexOf('=')), entry.slice(entry.indexOf('=') + 1)]),
      );
      found.push({ argv: argv.slice(1), env });
    } catch {
      // The process ended meanwhile, or is not ours to read.
    }
  }
  return found;
}
