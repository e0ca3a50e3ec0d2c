const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;
const ZERO_TRACE = '0'.repeat(32);
const ZERO_PARENT = '0'.repeat(16);

/**
 * The trace id of a W3C `traceparent` header, or `undefined` when the header
 * is absent or invalid (wrong shape, version `ff`, all-zero ids, or extra
 * fields on version 00).
 *
 * @example
 * traceIdFromTraceparent('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01');
 * // '4bf92f3577b34da6a3ce929d0e0e4736'
 */
export function traceIdFromTraceparent(header: string | null | undefined): string | undefined {
  if (!header) return undefined;
  const match = TRACEPARENT.exec(header.trim());
  if (!match) return undefined;
  const [, version, traceId, parentId, , rest] = match;
  if (version === 'ff' || traceId === ZERO_TRACE || parentId === ZERO_PARENT) return undefined;
  if (version === '00' && rest !== undefined) return undefined;
  return traceId;
}

/** A fresh random 32-hex-digit trace id (from `randomUUID`, whose entropy pool is cached). */
export function newTraceId(): string {
  const id = crypto.randomUUID().replace(/-/g, '');
  return id === ZERO_TRACE ? newTraceId() : id;
}

/** The trace id of a request: from a valid `traceparent`, else a new one. */
export function resolveTraceId(traceparent: string | null | undefined): string {
  return traceIdFromTraceparent(traceparent) ?? newTraceId();
}
