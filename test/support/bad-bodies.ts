import { describe, expect, it } from 'vitest';
import { expectProblem } from './api.js';
import { type StartExampleApp, type StartedExampleApp, startExampleAppForSuite } from './flow.js';

/** A valid first administrator for `POST …/v1/identity/setup/admin`. */
export const SETUP_ADMIN = {
  email: 'ada@example.com',
  password: 'correct horse battery staple',
  firstName: 'Ada',
  lastName: 'Lovelace',
  organizationName: 'Analytical Engines',
} as const;

/** The setup body with a first name that takes it over idt's 1 MiB JSON limit. */
export const OVERSIZED_SETUP = JSON.stringify({ ...SETUP_ADMIN, firstName: 'A'.repeat(1_048_576) });

/** A bad body for `POST …/v1/identity/setup/admin`, and idt's own answer when it reads it itself (SPEC 7.1). */
export interface BadBody {
  readonly name: string;
  readonly type: string;
  readonly body: string;
  /** Streamed without a Content-Length. */
  readonly chunked?: boolean;
  readonly status: number;
  readonly detail: string;
}

/** Malformed, wrongly typed and oversized bodies, each answered with an `Http.ClientError` problem document. */
export const BAD_BODIES: readonly BadBody[] = [
  {
    name: 'malformed JSON',
    type: 'application/json',
    body: '{"email": "ada@example.com",',
    status: 400,
    detail: 'The request body is not valid JSON.',
  },
  {
    name: 'JSON sent as text/plain',
    type: 'text/plain',
    body: JSON.stringify(SETUP_ADMIN),
    status: 415,
    detail: 'Send the body as application/json.',
  },
  {
    name: 'an XML body',
    type: 'application/xml',
    body: '<admin email="ada@example.com"/>',
    status: 415,
    detail: 'Send the body as application/json.',
  },
  {
    name: 'a body over 1 MiB',
    type: 'application/json',
    body: OVERSIZED_SETUP,
    status: 413,
    detail: 'The request body exceeds 1048576 bytes.',
  },
  {
    name: 'a chunked body over 1 MiB',
    type: 'application/json',
    body: OVERSIZED_SETUP,
    chunked: true,
    status: 413,
    detail: 'The request body exceeds 1048576 bytes.',
  },
];

/** Posts a body; `chunked` streams it in 64 KiB pieces without a Content-Length. */
export function postBody(
  url: string,
  type: string,
  body: string,
  chunked = false,
  headers: Record<string, string> = {},
): Promise<Response> {
  const init = { method: 'POST', headers: { 'content-type': type, ...headers } };
  if (!chunked) return fetch(url, { ...init, body });
  const bytes = new TextEncoder().encode(body);
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      for (let at = 0; at < bytes.length; at += 65_536) controller.enqueue(bytes.subarray(at, at + 65_536));
      controller.close();
    },
  });
  return fetch(url, { ...init, body: stream, duplex: 'half' } as RequestInit);
}

/**
 * A framework example started on a fresh SQLite database, sent every bad
 * body of {@link BAD_BODIES} and one without a content type: each answers
 * idt's problem document, and setup still needs its first administrator
 * afterwards. `more` adds the framework's own cases inside the suite.
 */
export function describeBadBodies<App extends StartedExampleApp>(
  title: string,
  start: StartExampleApp<App>,
  more?: (app: () => App) => void,
): void {
  describe(`${title}: bad bodies to idt answer its problem documents`, () => {
    const app = startExampleAppForSuite(start, 'sqlite');

    it.each(BAD_BODIES)('answers $name with idt’s problem document', async (bad) => {
      const response = await postBody(`${app().baseUrl}/v1/identity/setup/admin`, bad.type, bad.body, bad.chunked);
      const problem = await expectProblem(response, bad.status, 'Http.ClientError');
      expect(problem.detail).toBe(bad.detail);
    });

    it('answers a body without a content type with idt’s problem document', async () => {
      const untyped = await fetch(`${app().baseUrl}/v1/identity/setup/admin`, {
        method: 'POST',
        body: new Blob([JSON.stringify(SETUP_ADMIN)]),
      });
      expect((await expectProblem(untyped, 415, 'Http.ClientError')).detail).toBe('Send the body as application/json.');
    });

    more?.(app);

    it('wrote nothing: setup still needs its first administrator', async () => {
      const status = await fetch(`${app().baseUrl}/v1/identity/setup/status`);
      expect(await status.json()).toEqual({ setupRequired: true });
    });
  });
}
