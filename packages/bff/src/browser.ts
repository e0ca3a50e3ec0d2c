/**
 * `@idt/bff/browser`: code that runs in the page. ESM, no dependencies, no
 * Node APIs.
 *
 * @packageDocumentation
 */
export type {
  BrowserLogError,
  BrowserLogger,
  BrowserLoggerOptions,
  BrowserLogLevel,
  BrowserLogRecord,
  ConsoleLike,
  DocumentLike,
  EventTargetLike,
  FetchLike,
  NavigatorLike,
} from './browser/logger.js';
export { BROWSER_LOGGER_LIMITS, createBrowserLogger, redactBrowserAttrs, splitBrowserLogBatches } from './browser/logger.js';
