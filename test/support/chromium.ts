/**
 * Headless Chromium for the tests that look at pages in a real browser
 * (`*.browser.test.ts`): where it is, whether to skip, how it starts, and
 * what a page must not log.
 */
import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import type { Browser, BrowserContext, Page, Response } from 'playwright-core';

/** Where the tests find Chromium (`.ci/run` installs it there). */
export const CHROMIUM_PATH = '/usr/bin/chromium';

/**
 * Whether to skip the Chromium tests: on a developer machine without
 * Chromium. In CI a missing browser fails the run instead.
 *
 * @example
 * describe.skipIf(withoutChromium)('the account pages in headless Chromium', () => {});
 */
export const withoutChromium = !existsSync(CHROMIUM_PATH) && !process.env.CI;

/**
 * Starts headless Chromium (playwright-core is loaded on first use, so
 * importing the test support costs nothing); close it in `afterAll`.
 *
 * @example
 * browser = await launchChromium();
 */
export async function launchChromium(): Promise<Browser> {
  const { chromium } = await import('playwright-core');
  return chromium.launch({
    executablePath: CHROMIUM_PATH,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
}

/**
 * Collects a page's console errors (a failed request such as a missing
 * `/favicon.ico` logs one), messages about the content security policy and
 * uncaught exceptions: there must be none. The one console error left out
 * is Chromium's note of the document's own error status (an error page is one).
 *
 * @example
 * const problems = consoleProblems(page);
 * await page.goto(url);
 * expect(problems).toEqual([]);
 */
export function consoleProblems(page: Page): string[] {
  const messages: string[] = [];
  page.on('console', (message) => {
    const ownStatus = message.text().startsWith('Failed to load resource') && message.location().url === page.url();
    if ((message.type() === 'error' && !ownStatus) || /content security policy/i.test(message.text())) {
      messages.push(`${page.url()}: ${message.text()} (${message.location().url})`);
    }
  });
  page.on('pageerror', (error) => messages.push(`${page.url()}: ${error.message}`));
  return messages;
}

/** A relying party's callback a real browser can land on. */
export interface CallbackPage {
  /** The redirect URI: `http://127.0.0.1:PORT/callback`. */
  readonly url: string;
  close(): Promise<void>;
}

/**
 * Starts the relying party's callback for a browser test: a bare page on a
 * loopback port, so that a sign-in's last redirect lands somewhere.
 *
 * @example
 * const callback = await startCallbackPage();
 * // register a client with redirectUris: [callback.url]; in afterAll: await callback.close();
 */
export async function startCallbackPage(): Promise<CallbackPage> {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('callback');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** axe-core's browser build, evaluated in each page through the DevTools protocol (the pages' CSP allows no inline script). */
let axeSource: string | undefined;
/** The source, read on first use. */
const AXE_SOURCE = () => {
  axeSource ??= readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
  return axeSource;
};

/** One axe finding, as the report keeps it. */
export interface AxeFinding {
  readonly id: string;
  readonly impact: string | null;
  readonly help: string;
  readonly targets: string[];
}

/**
 * Runs axe-core in the page (its default rules: WCAG 2.x A/AA and best practices); every violation, and how many rules passed.
 *
 * @example
 * const { violations } = await axe(page);
 * expect(violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')).toEqual([]);
 */
export async function axe(page: Page): Promise<{ violations: AxeFinding[]; passed: number }> {
  // Runtime.evaluate is not subject to the page's CSP; a <script> tag with this content would be refused by it.
  if (!(await page.evaluate<boolean>('typeof window.axe === "object"'))) await page.evaluate<void>(`${AXE_SOURCE()}\n;void 0`);
  return page.evaluate<{ violations: AxeFinding[]; passed: number }>(`axe.run(document).then((result) => ({
    passed: result.passes.length,
    violations: result.violations.map((v) => ({ id: v.id, impact: v.impact, help: v.help, targets: v.nodes.slice(0, 5).map((n) => n.target.join(' ')) })),
  }))`);
}

/** Scripts written into the page and \`style\` attributes: the CSP (no 'unsafe-inline') would refuse both. */
export function inlineCode(page: Page): Promise<number> {
  return page.evaluate<number>("document.querySelectorAll('script:not([src]), [style]').length");
}

/** Whether the page fits its viewport's width (no sideways scrolling). */
export function fits(page: Page): Promise<boolean> {
  return page.evaluate<boolean>('document.documentElement.scrollWidth <= window.innerWidth');
}

/** Presses Tab until `selector` has the focus (at most `max` times); fails when it never does. */
export async function tabTo(page: Page, selector: string, max = 30): Promise<number> {
  for (let presses = 1; presses <= max; presses++) {
    await page.keyboard.press('Tab');
    if ((await page.locator(`${selector}:focus`).count()) === 1) return presses;
  }
  throw new Error(`${selector} never got the keyboard focus on ${page.url()}`);
}

/** The document responses (navigations of the main frame) of each tab {@link openTab} opened, in order. */
const tabDocuments = new WeakMap<Page, Response[]>();

/**
 * A new browser context and tab (360 px wide unless told), with its console
 * problems ({@link consoleProblems}) and its documents recorded for {@link lastDocument}.
 *
 * @example
 * const { context, page, problems } = await openTab(browser);
 */
export async function openTab(
  browser: Browser,
  viewport: { width: number; height: number } = { width: 360, height: 900 },
): Promise<{ context: BrowserContext; page: Page; problems: string[] }> {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  const seen: Response[] = [];
  tabDocuments.set(page, seen);
  page.on('response', (response) => {
    if (response.request().isNavigationRequest() && response.frame() === page.mainFrame()) seen.push(response);
  });
  return { context, page, problems: consoleProblems(page) };
}

/** The last document response of a tab {@link openTab} opened (its headers: the page's CSP, say). */
export function lastDocument(page: Page): Response | undefined {
  return tabDocuments.get(page)?.at(-1);
}
