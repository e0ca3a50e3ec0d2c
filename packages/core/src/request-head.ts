/**
 * The head of a request: what authentication, gates and the pipeline read
 * of any request, whichever host (Fetch or node:http) received it.
 */

/** Header access as the pipeline needs it; `Headers` has it. */
export interface HeaderReader {
  get(name: string): string | null;
}

/** The parts of a request the pipeline reads; a Fetch `Request` has them all. */
export interface RequestHead {
  readonly method: string;
  /** The absolute request URL. */
  readonly url: string;
  readonly headers: HeaderReader;
}
