import {
  ArgumentError,
  ClientClosedError,
  ProblemError,
  type ProblemFieldErrors,
  UnauthorizedError,
  ValidationProblem,
} from './errors.js';
import { reasonPhrase } from './kinds.js';

/** The deployment environment, which decides whether `exception` is written. */
export type ProblemEnvironment = 'Development' | 'Testing' | 'Production';

/**
 * An RFC 9457 problem document with the members of SPEC 7.1. `instance`,
 * `api` and `version` are never written.
 */
export interface ProblemDocument {
  type: 'about:blank';
  title: string;
  status: number;
  detail: string;
  code: string;
  traceId: string;
  errors?: ProblemFieldErrors;
  exception?: ProblemException;
}

/** What a Development 5xx reveals about the failure. */
export interface ProblemException {
  type: string;
  message: string;
  stack?: string[];
}

/** A rendered error: the status, headers and body to send. */
export interface RenderedProblem {
  status: number;
  headers: Record<string, string>;
  /** `null` for 499: the client is gone, nothing is written. */
  body: ProblemDocument | null;
}

/** Options of {@link renderProblem}. */
export interface RenderProblemOptions {
  environment: ProblemEnvironment;
  traceId: string;
}

/** The one `detail` every 5xx carries, in every environment. */
export const GENERIC_SERVER_DETAIL =
  'The service could not complete the request; try again later and quote the traceId if the problem persists.';

/** The media type of problem documents. */
export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/**
 * Maps any thrown value onto a problem (SPEC 7.4): problem errors keep their
 * kind and code; validator failures (anything with zod-style `issues`) become
 * `Validation.Failed`; unauthorized access `Auth.Unauthenticated`; argument
 * errors and malformed requests `Http.ClientError`; anything else `Server.Error`.
 */
export function toProblemError(error: unknown): ProblemError | ClientClosedError {
  if (error instanceof ProblemError || error instanceof ClientClosedError) return error;
  if (error instanceof UnauthorizedError) {
    return new ProblemError('Auth.Unauthenticated', error.message, { headers: error.headers, cause: error });
  }
  if (error instanceof ArgumentError) {
    return new ProblemError('Http.ClientError', error.message, { cause: error });
  }
  if (isIssueList(error)) {
    return new ValidationProblem(fieldErrorsFromIssues(error.issues));
  }
  const status = clientErrorStatus(error);
  if (status !== undefined) {
    return new ProblemError('Http.ClientError', safeClientMessage(error, status), { status, cause: error });
  }
  return new ProblemError('Server.Error', undefined, { cause: error });
}

/**
 * Renders any thrown value as a problem document (SPEC 7.1).
 *
 * @example
 * const { status, headers, body } = renderProblem(error, { environment: 'Production', traceId });
 */
export function renderProblem(error: unknown, options: RenderProblemOptions): RenderedProblem {
  const problem = toProblemError(error);
  if (problem instanceof ClientClosedError) {
    return { status: 499, headers: {}, body: null };
  }
  const isServerError = problem.status >= 500;
  const body: ProblemDocument = {
    type: 'about:blank',
    title: reasonPhrase(problem.status),
    status: problem.status,
    detail: isServerError ? GENERIC_SERVER_DETAIL : problem.detail,
    code: problem.code,
    traceId: options.traceId,
  };
  if (problem.errors && problem.kind === 'Validation') body.errors = problem.errors;
  if (isServerError && options.environment === 'Development') {
    const exception = describeException(problem);
    if (exception) body.exception = exception;
  }
  return {
    status: problem.status,
    headers: { 'content-type': PROBLEM_CONTENT_TYPE, ...problem.headers },
    body,
  };
}

function describeException(problem: ProblemError): ProblemException | undefined {
  const source = problem.cause ?? (problem.code === 'Server.Error' ? problem : undefined);
  if (source === undefined) return undefined;
  if (source instanceof Error) {
    const exception: ProblemException = { type: source.name, message: source.message };
    if (source.stack) exception.stack = source.stack.split('\n').map((line) => line.trim());
    return exception;
  }
  return { type: typeof source, message: String(source) };
}

interface Issue {
  path: ReadonlyArray<PropertyKey | { key: PropertyKey }>;
  message: string;
}

function isIssueList(error: unknown): error is { issues: Issue[] } {
  if (typeof error !== 'object' || error === null) return false;
  const issues = (error as { issues?: unknown }).issues;
  return (
    Array.isArray(issues) &&
    issues.length > 0 &&
    issues.every(
      (issue) => typeof issue === 'object' && issue !== null && typeof issue.message === 'string' && Array.isArray(issue.path),
    )
  );
}

/**
 * Groups validator issues by camelCase member path: `['Address','Street']`
 * becomes `address.street`, `['redirectUris', 0]` becomes `redirectUris[0]`.
 * An issue on the whole body is keyed by the empty string.
 */
export function fieldErrorsFromIssues(issues: readonly Issue[]): ProblemFieldErrors {
  const errors: ProblemFieldErrors = {};
  for (const issue of issues) {
    const key = memberPath(issue.path.map((segment) => (typeof segment === 'object' ? segment.key : segment)));
    const list = errors[key] ?? [];
    if (!list.includes(issue.message)) list.push(issue.message);
    errors[key] = list;
  }
  return errors;
}

/**
 * Builds a camelCase member path with dots preserved.
 *
 * @example
 * memberPath(['Client', 'RedirectUris', 0]); // 'client.redirectUris[0]'
 * memberPath(['Address.Street']);             // 'address.street'
 */
export function memberPath(path: ReadonlyArray<PropertyKey>): string {
  let out = '';
  for (const segment of path) {
    if (typeof segment === 'number') {
      out += `[${segment}]`;
      continue;
    }
    for (const part of String(segment).split('.')) {
      const camel = part.length > 0 ? part[0]?.toLowerCase() + part.slice(1) : part;
      out += out.length === 0 ? camel : `.${camel}`;
    }
  }
  return out;
}

function clientErrorStatus(error: unknown): number | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const candidate =
    (error as { status?: unknown; statusCode?: unknown }).status ?? (error as { statusCode?: unknown }).statusCode;
  if (typeof candidate === 'number' && Number.isInteger(candidate) && candidate >= 400 && candidate <= 499) {
    return candidate;
  }
  return undefined;
}

function safeClientMessage(error: unknown, status: number): string {
  const expose = (error as { expose?: unknown }).expose;
  const message = (error as { message?: unknown }).message;
  if (expose === true && typeof message === 'string' && message.length > 0 && message.length <= 300) return message;
  return `The request is malformed (${reasonPhrase(status)}).`;
}
