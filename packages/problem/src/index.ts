/**
 * RFC 9457 problem documents for idt: the error kinds and statuses, the
 * registry of stable codes, the exception mapping and the renderer.
 *
 * @packageDocumentation
 */

export type { GenericCode } from './codes.js';
export { GenericCodes } from './codes.js';
export type { ProblemErrorOptions, ProblemFieldErrors } from './errors.js';
export {
  ArgumentError,
  ClientClosedError,
  ProblemError,
  UnauthorizedError,
  ValidationProblem,
} from './errors.js';
export type { ProblemKind } from './kinds.js';
export { problemKinds, reasonPhrase, statusOfKind } from './kinds.js';
export type { ProblemCodeDefinition, ProblemCodeSpec } from './registry.js';
export { isValidProblemCode, ProblemRegistry, problemRegistry, registerProblemCodes } from './registry.js';
export type {
  ProblemDocument,
  ProblemEnvironment,
  ProblemException,
  RenderedProblem,
  RenderProblemOptions,
} from './render.js';
export {
  fieldErrorsFromIssues,
  GENERIC_SERVER_DETAIL,
  memberPath,
  PROBLEM_CONTENT_TYPE,
  renderProblem,
  toProblemError,
} from './render.js';
export { newTraceId, resolveTraceId, traceIdFromTraceparent } from './trace.js';
