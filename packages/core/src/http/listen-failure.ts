/**
 * A failure to listen as the operator of a server reads it: the port is
 * taken, needs privileges, or the host is not an address of this machine.
 * The `idt` CLI (`idt serve`) and the reference server (`npm start`) report
 * it the same way, each naming its own way to choose another port.
 */
export interface ListenFailure {
  /** `Server.PortInUse`, `Server.PortForbidden` or `Server.HostUnavailable`. */
  readonly code: 'Server.PortInUse' | 'Server.PortForbidden' | 'Server.HostUnavailable';
  /** One sentence naming the cause. */
  readonly detail: string;
  /** One sentence naming the fix. */
  readonly fix: string;
}

/** How the process that failed is told another port or address. */
export interface ListenFailureOptions {
  /** The port it tried. */
  readonly port: number;
  /** The address it tried. */
  readonly host: string;
  /** How to start it on another port: `--port 8081 (or PORT=8081)` for `idt serve`; `PORT=8081` by default. */
  readonly anotherPort?: (port: number) => string;
  /** How to start it on another address: `--host 127.0.0.1 (or HOST=127.0.0.1)`; `HOST=127.0.0.1` by default. */
  readonly anotherHost?: (host: string) => string;
}

/**
 * Describes a failure of `listen` (`EADDRINUSE`, `EACCES`, `EADDRNOTAVAIL`)
 * with its cause and fix; `undefined` for any other error.
 *
 * @example
 * const { url } = await idt.listen(port, host).catch((error) => {
 *   const failure = describeListenFailure(error, { port, host, anotherPort: (p) => `PORT=${p} npm start` });
 *   if (!failure) throw error;
 *   console.error(listenFailureLines(failure).join('\n'));
 *   process.exit(1);
 * });
 */
export function describeListenFailure(error: unknown, options: ListenFailureOptions): ListenFailure | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  const { port, host } = options;
  const anotherPort = options.anotherPort ?? ((other: number) => `PORT=${other}`);
  const anotherHost = options.anotherHost ?? ((other: string) => `HOST=${other}`);
  const other = port === 8080 ? 8081 : 8080;
  if (code === 'EADDRINUSE') {
    return {
      code: 'Server.PortInUse',
      detail: `Port ${port} on ${host} is already in use by another process.`,
      fix: `Stop the process that listens there, or choose another port: ${anotherPort(other)}; ${anotherPort(0)} picks a free one.`,
    };
  }
  if (code === 'EACCES') {
    return {
      code: 'Server.PortForbidden',
      detail: `Listening on port ${port} of ${host} is not permitted for this user.`,
      fix: `Use a port above 1023: ${anotherPort(other)}.`,
    };
  }
  if (code === 'EADDRNOTAVAIL') {
    return {
      code: 'Server.HostUnavailable',
      detail: `${host} is not an address of this machine.`,
      fix: `Choose an address of this machine: ${anotherHost('127.0.0.1')} (or ${anotherHost('0.0.0.0')} for every interface).`,
    };
  }
  return undefined;
}

/** A listen failure as printed on standard error: `error: <detail> (<code>)`, then the fix indented below it. */
export function listenFailureLines(failure: ListenFailure): [string, string] {
  return [`error: ${failure.detail} (${failure.code})`, `  ${failure.fix}`];
}
