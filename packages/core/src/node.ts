/**
 * The node:http adapter of the idt HTTP kit.
 *
 * @packageDocumentation
 */
export type { BodyErrorHandler, BodyErrorHandlerSource } from './http/body-errors.js';
export { createBodyErrorHandler } from './http/body-errors.js';
export type { ListenFailure, ListenFailureOptions } from './http/listen-failure.js';
export { describeListenFailure, listenFailureLines } from './http/listen-failure.js';
export type { BoundServer, UpgradeListener } from './http/listen-first.js';
export { listenFirst } from './http/listen-first.js';
export type { NodeHandlerOptions, NodePreHandler } from './http/node-adapter.js';
export {
  clientSignal,
  createNodeHandler,
  nodeRequestInfo,
  requestUrl,
  toFetchRequest,
  toIncomingRequest,
  writeFetchResponse,
} from './http/node-adapter.js';
export { runNodeHandler } from './http/node-bridge.js';
export type { IdtNodeHandler, IdtNodeHandlerOptions } from './http/node-entry.js';
export { createIdtNodeHandler } from './http/node-entry.js';
