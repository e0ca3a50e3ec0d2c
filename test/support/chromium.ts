/**
 * Headless Chromium for the tests that look at pages in a real browser
 * (`*.browser.test.ts`): where it is, whether to skip, how it starts, and
 * what a page must not log.
 */
import { existsSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'playwright-core';

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
