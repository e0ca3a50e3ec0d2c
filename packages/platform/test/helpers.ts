/** The API helpers of the platform suites live in @idt/testing, shared with the reference server's suites. */
export type { CallOptions, World } from '@idt/testing';
export { caller, expectJson, expectProblem, outboxEvents, seedWorld } from '@idt/testing';
