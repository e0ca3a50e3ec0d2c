import { createHash, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { IDT_ICON_LINK } from '@idt/core';
import type { Command } from 'commander';
import { CliError, usageError } from '../errors.js';
import type { CliIo } from '../io.js';
import { createOutput } from '../output.js';
import { examples, readCommandVariables } from './shared.js';

interface SignInOptions {
  readonly from?: string;
  readonly envFile?: string;
  readonly timeout: string;
  readonly json?: boolean;
}

/** The variables of an application's env file that `idt sign-in` reads. */
const SIGN_IN_VARIABLES = ['OIDC_ISSUER', 'OIDC_CLIENT_ID', 'OIDC_CLIENT_SECRET', 'OIDC_REDIRECT_URI'] as const;

/** The hosts a redirect URI may name for `idt sign-in` to receive it (RFC 8252, 7.3). */
const LOOPBACK = new Set(['localhost', '127.0.0.1']);

/** What `idt sign-in` got from the token endpoint. */
export interface SignInTokens {
  readonly accessToken: string;
  readonly tokenType: string;
  readonly expiresIn: number | null;
  readonly scope: string | null;
  readonly idToken: string | null;
  readonly refreshToken: string | null;
}

/** A PKCE pair (RFC 7636, S256). */
function pkce(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/** The page the browser shows after the redirect. */
function page(title: string, text: string): string {
  const escaped = (value: string) => value.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);
  return `<!doctype html><html lang="en"><meta charset="utf-8">${IDT_ICON_LINK}<title>${escaped(title)}</title><body style="font-family:system-ui,sans-serif;max-width:36rem;margin:4rem auto"><h1>${escaped(title)}</h1><p id="result">${escaped(text)}</p></body></html>`;
}

/**
 * `idt sign-in`: the authorization code flow with PKCE for an application,
 * as a native app does it (RFC 8252): it listens on the application's
 * loopback redirect URI, prints the authorization URL to open in a browser,
 * exchanges the code the browser brings back, and prints the access token.
 */
export function registerSignIn(program: Command, io: CliIo): void {
  program
    .command('sign-in')
    .summary('sign a user in through the browser and print their access token')
    .description(
      "Signs a user in with the authorization code flow and PKCE, as a native app does: reads OIDC_ISSUER, OIDC_CLIENT_ID, OIDC_CLIENT_SECRET, OIDC_REDIRECT_URI and OIDC_SCOPES from an application's env file (--from; `idt demo` writes data/demo/cli.env), listens on the redirect URI (it must be http://localhost:<port>/… or http://127.0.0.1:<port>/…), prints the URL to open in a browser on standard error, and once the browser comes back exchanges the code and prints the access token alone on standard output (or JSON with --json: access, ID and refresh tokens). Needs the server running; not the database.",
    )
    .option('--from <path>', 'the env file of an application with a loopback redirect URI')
    .option('--env-file <path>', 'the same as --from; under npx write --from (npx takes --env-file itself)')
    .option('--timeout <seconds>', 'how long to wait for the browser', '300')
    .option('--json', 'print one JSON document: the tokens, their type, lifetime and scope')
    .addHelpText(
      'after',
      examples(
        'npx idt sign-in --from data/demo/cli.env',
        'TOKEN=$(npx idt sign-in --from data/demo/cli.env); curl -H "authorization: Bearer $TOKEN" http://localhost:8080/v1/identity/users/me',
      ),
    )
    .action(async (options: SignInOptions) => {
      const out = createOutput(io, options.json === true);
      if (options.from !== undefined && options.envFile !== undefined && options.from !== options.envFile) {
        throw usageError('--from and --env-file name different files; give one of them.');
      }
      const timeoutSeconds = Number(options.timeout);
      if (!/^\d+$/.test(options.timeout) || timeoutSeconds < 1) {
        throw usageError(`--timeout must be a whole number of seconds, not "${options.timeout}".`);
      }
      const { variables, where } = await readCommandVariables(io, options.from ?? options.envFile, {
        required: SIGN_IN_VARIABLES,
        unreadableHint:
          'Write one with `idt demo` (data/demo/cli.env) or idt register-client --kind application --redirect-uri http://127.0.0.1:8765/callback … --env-out <path>.',
        missingHint: (where) =>
          where === undefined
            ? 'Name an application’s env file: idt sign-in --from data/demo/cli.env (idt demo writes it).'
            : `${where} is not an application’s env file; idt demo writes data/demo/cli.env.`,
      });
      const issuer = String(variables.OIDC_ISSUER).replace(/\/+$/, '');
      const clientId = String(variables.OIDC_CLIENT_ID);
      const secret = String(variables.OIDC_CLIENT_SECRET);
      const redirectUri = String(variables.OIDC_REDIRECT_URI);
      const scope = variables.OIDC_SCOPES ?? 'openid';
      let redirect: URL;
      try {
        redirect = new URL(redirectUri);
      } catch {
        throw new CliError('Config.Invalid', `OIDC_REDIRECT_URI in ${where} is not a URL: ${redirectUri}.`);
      }
      if (redirect.protocol !== 'http:' || !LOOPBACK.has(redirect.hostname) || redirect.port === '') {
        throw new CliError(
          'SignIn.RedirectNotLoopback',
          `idt sign-in receives the browser on this machine, but OIDC_REDIRECT_URI in ${where} is ${redirectUri}.`,
          {
            hints: [
              'Use an application whose redirect URI is http://127.0.0.1:<port>/<path> or http://localhost:<port>/<path> (idt demo writes data/demo/cli.env).',
            ],
          },
        );
      }

      const discoveryUrl = `${issuer}/.well-known/openid-configuration`;
      const unreachable = (error: unknown, url: string) =>
        new CliError(
          'SignIn.IssuerUnreachable',
          `Cannot reach ${url}: ${(error as Error).cause ? String(((error as Error).cause as Error).message) : (error as Error).message}.`,
          { hints: [`Check OIDC_ISSUER (${issuer}) in ${where}, and that the server is running (npm start, or npx idt serve).`] },
        );
      let discovery: { authorization_endpoint?: unknown; token_endpoint?: unknown };
      try {
        const response = await fetch(discoveryUrl, { headers: { accept: 'application/json' } });
        if (!response.ok) throw new Error(`HTTP ${response.status}`);
        discovery = (await response.json()) as typeof discovery;
      } catch (error) {
        throw unreachable(error, discoveryUrl);
      }
      const { authorization_endpoint: authorizationEndpoint, token_endpoint: tokenEndpoint } = discovery;
      if (typeof authorizationEndpoint !== 'string' || typeof tokenEndpoint !== 'string') {
        throw new CliError('SignIn.IssuerUnreachable', `${discoveryUrl} names no authorization or token endpoint.`, {
          hints: [`Check OIDC_ISSUER (${issuer}) in ${where}: it must be the idt issuer.`],
        });
      }

      const { verifier, challenge } = pkce();
      const state = randomBytes(16).toString('base64url');
      const nonce = randomBytes(16).toString('base64url');
      const authorizeUrl = new URL(authorizationEndpoint);
      for (const [name, value] of Object.entries({
        response_type: 'code',
        client_id: clientId,
        redirect_uri: redirectUri,
        scope,
        state,
        nonce,
        code_challenge: challenge,
        code_challenge_method: 'S256',
      })) {
        authorizeUrl.searchParams.set(name, value);
      }

      // The browser's request stays open until the code is exchanged, so its page tells the outcome.
      const { code, answer } = await new Promise<{ code: string; answer: (ok: boolean, text: string) => void }>(
        (resolveCode, reject) => {
          let settled = false;
          let server: Server | undefined;
          const finish = (error: unknown, value?: { code: string; answer: (ok: boolean, text: string) => void }) => {
            if (settled) return;
            settled = true;
            clearTimeout(timer);
            io.signal?.removeEventListener('abort', onAbort);
            server?.close();
            if (error) {
              server?.closeAllConnections();
              reject(error);
            } else {
              resolveCode(value as { code: string; answer: (ok: boolean, text: string) => void });
            }
          };
          const timer = setTimeout(
            () =>
              finish(
                new CliError('SignIn.TimedOut', `No browser came back to ${redirectUri} within ${timeoutSeconds} s.`, {
                  hints: [
                    'Open the URL printed above in a browser on this machine and sign in; --timeout <seconds> waits longer.',
                  ],
                }),
              ),
            timeoutSeconds * 1000,
          );
          const onAbort = () => finish(new CliError('SignIn.TimedOut', 'The sign-in was stopped before the browser came back.'));
          io.signal?.addEventListener('abort', onAbort, { once: true });
          server = createServer((request, response) => {
            const url = new URL(request.url ?? '/', redirect.origin);
            if (url.pathname !== redirect.pathname) {
              response.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('Not the redirect URI.\n');
              return;
            }
            const html = (status: number, title: string, text: string) =>
              response.writeHead(status, { 'content-type': 'text/html; charset=utf-8' }).end(page(title, text));
            if (url.searchParams.get('state') !== state) {
              html(400, 'Sign-in not recognized', 'This redirect does not belong to the sign-in the terminal started.');
              return;
            }
            const error = url.searchParams.get('error');
            if (error) {
              const description = url.searchParams.get('error_description');
              html(400, 'Sign-in failed', `${error}${description ? `: ${description}` : ''}. See the terminal.`);
              finish(
                new CliError(
                  'SignIn.Refused',
                  `The provider ended the sign-in: ${error}${description ? ` (${description})` : ''}.`,
                  {
                    hints: ['Run idt sign-in again and complete the sign-in (and consent) in the browser.'],
                  },
                ),
              );
              return;
            }
            const received = url.searchParams.get('code');
            if (!received) {
              html(400, 'Sign-in failed', 'The redirect carries no code.');
              return;
            }
            finish(undefined, {
              code: received,
              answer: (ok, text) => {
                html(ok ? 200 : 400, ok ? 'Signed in' : 'Sign-in failed', text);
                server?.closeAllConnections();
              },
            });
          });
          server.once('error', (error: NodeJS.ErrnoException) =>
            finish(
              error.code === 'EADDRINUSE'
                ? new CliError(
                    'SignIn.PortInUse',
                    `Port ${redirect.port} of ${redirectUri} is already in use by another process.`,
                    {
                      hints: ['Stop the other idt sign-in (or whatever listens there), then run this one again.'],
                      cause: error,
                    },
                  )
                : error,
            ),
          );
          // localhost resolves to 127.0.0.1 first here (and browsers try both).
          server.listen(Number(redirect.port), redirect.hostname === 'localhost' ? '127.0.0.1' : redirect.hostname, () => {
            io.err(
              `Open this URL in a browser and sign in:\n\n  ${authorizeUrl.href}\n\nWaiting for the browser at ${redirectUri}…\n`,
            );
          });
        },
      );

      const basic = Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(secret)}`).toString('base64');
      let response: Response;
      try {
        response = await fetch(tokenEndpoint, {
          method: 'POST',
          headers: {
            authorization: `Basic ${basic}`,
            'content-type': 'application/x-www-form-urlencoded',
            accept: 'application/json',
          },
          body: new URLSearchParams({
            grant_type: 'authorization_code',
            code,
            redirect_uri: redirectUri,
            code_verifier: verifier,
          }),
        });
      } catch (error) {
        answer(false, 'The token endpoint did not answer. See the terminal.');
        throw unreachable(error, tokenEndpoint);
      }
      const body = (await response.json().catch(() => ({}))) as Record<string, unknown>;
      if (!response.ok || typeof body.access_token !== 'string') {
        answer(false, 'The provider refused the code. See the terminal.');
        const reason = [body.error, body.error_description].filter((part) => typeof part === 'string').join(': ');
        throw new CliError(
          'SignIn.Refused',
          `The token endpoint refused the code (HTTP ${response.status}${reason ? `, ${reason}` : ''}).`,
          {
            hints: [
              body.error === 'invalid_client'
                ? `Check OIDC_CLIENT_ID and OIDC_CLIENT_SECRET in ${where}; after idt rotate-secret only the new secret works.`
                : 'Run idt sign-in again: a code is good for one exchange, for a short time.',
            ],
          },
        );
      }
      const tokens: SignInTokens = {
        accessToken: body.access_token,
        tokenType: typeof body.token_type === 'string' ? body.token_type : 'Bearer',
        expiresIn: typeof body.expires_in === 'number' ? body.expires_in : null,
        scope: typeof body.scope === 'string' ? body.scope : null,
        idToken: typeof body.id_token === 'string' ? body.id_token : null,
        refreshToken: typeof body.refresh_token === 'string' ? body.refresh_token : null,
      };
      answer(true, 'You are signed in. Return to the terminal; you can close this tab.');
      out.progress(`Signed in to ${issuer} as the application ${clientId}; the access token follows.`);
      if (!out.json) io.out(`${tokens.accessToken}\n`);
      out.result({ ...tokens, clientId, issuer });
    });
}
