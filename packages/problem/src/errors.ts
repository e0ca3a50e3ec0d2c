import { type ProblemKind, problemKinds } from './kinds.js';
import './codes.js';
import { problemRegistry } from './registry.js';

/** Validation messages keyed by camelCase member path (`redirectUris[0]`, `address.street`). */
export type ProblemFieldErrors = Record<string, string[]>;

/** Options of a {@link ProblemError}. */
export interface ProblemErrorOptions {
  /** Field messages; only meaningful on validation problems. */
  readonly errors?: ProblemFieldErrors;
  /** Extra response headers, such as `Retry-After` or `WWW-Authenticate`. */
  readonly headers?: Record<string, string>;
  /** A 4xx status other than the kind's; allowed only for `Http.ClientError`. */
  readonly status?: number;
  /** The underlying error, shown in Development on 5xx. */
  readonly cause?: unknown;
}

/**
 * The one exception services throw: a registered code, its kind and a
 * user-safe `detail`. The HTTP edge renders it as a problem document.
 *
 * @example
 * throw new ProblemError('Identity.LastOwner', 'An organization needs at least one owner.');
 */
export class ProblemError extends Error {
  /** The registered code, e.g. `Identity.LastOwner`. */
  readonly code: string;
  /** The error kind of the code. */
  readonly kind: ProblemKind;
  /** The HTTP status. */
  readonly status: number;
  /** A user-safe sentence. */
  readonly detail: string;
  /** Field messages of a validation problem. */
  readonly errors: ProblemFieldErrors | undefined;
  /** Extra response headers. */
  readonly headers: Record<string, string>;

  /**
   * @param code - a code registered with the process-wide registry
   * @param detail - a user-safe sentence; defaults to the code's description
   * @throws TypeError when the code is not registered (a programming error)
   */
  constructor(code: string, detail?: string, options: ProblemErrorOptions = {}) {
    const definition = problemRegistry.get(code);
    if (!definition) {
      throw new TypeError(`Problem code "${code}" is not registered`);
    }
    const text = detail ?? definition.description;
    super(text, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ProblemError';
    this.code = code;
    this.kind = definition.kind;
    let status: number = problemKinds[definition.kind];
    if (options.status !== undefined) {
      if (code !== 'Http.ClientError' || options.status < 400 || options.status > 499) {
        throw new TypeError('Only Http.ClientError may carry its own status, and only a 4xx one');
      }
      status = options.status;
    }
    this.status = status;
    this.detail = text;
    this.errors = options.errors;
    this.headers = { ...options.headers };
  }
}

/**
 * A validator failure: renders 400 `Validation.Failed` with `errors`.
 *
 * @example
 * throw new ValidationProblem({ email: ['Enter a valid e-mail address.'] });
 */
export class ValidationProblem extends ProblemError {
  constructor(errors: ProblemFieldErrors, detail = 'One or more fields are invalid.') {
    super('Validation.Failed', detail, { errors });
    this.name = 'ValidationProblem';
  }
}

/** Unauthorized access: renders 401 `Auth.Unauthenticated`. */
export class UnauthorizedError extends Error {
  /** Extra response headers, typically `WWW-Authenticate`. */
  readonly headers: Record<string, string>;
  constructor(message = 'A valid credential is required.', headers: Record<string, string> = {}) {
    super(message);
    this.name = 'UnauthorizedError';
    this.headers = headers;
  }
}

/** A bad argument reaching a service: renders 400 `Http.ClientError`. */
export class ArgumentError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ArgumentError';
  }
}

/** The client went away before the response: renders 499 with no body. */
export class ClientClosedError extends Error {
  constructor(message = 'The client closed the request.') {
    super(message);
    this.name = 'ClientClosedError';
  }
}
