/**
 * `@idt/bff`: a backend-for-frontend that keeps tokens off the browser.
 * @packageDocumentation
 */
export { BffCodes } from './problems.js';
export type { BffSessions, CurrentSession, HeaderSource } from './sessions/current.js';
export type { BffSession, BffSessionStore, BffUser } from './sessions/store.js';
