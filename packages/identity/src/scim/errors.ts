import { LightResponse } from '@idt/core';
import { ProblemError, UnauthorizedError } from '@idt/problem';

/** The media type of every SCIM request and response body (RFC 7644 §3.1). */
export const SCIM_MEDIA_TYPE = 'application/scim+json';

/** The schema URI of SCIM error bodies (RFC 7644 §3.12). */
export const SCIM_ERROR_SCHEMA = 'urn:ietf:params:scim:api:messages:2.0:Error';

/** The `scimType` values of RFC 7644 §3.12 that idt answers. */
export type ScimType =
  | 'invalidFilter'
  | 'tooMany'
  | 'uniqueness'
  | 'mutability'
  | 'invalidSyntax'
  | 'invalidPath'
  | 'noTarget'
  | 'invalidValue'
  | 'invalidVers'
  | 'sensitive';

/**
 * An error a SCIM endpoint answers in SCIM's own error schema (SCIM clients
 * parse that, not problem documents): `status` is a string there.
 *
 * @example
 * throw new ScimError(400, 'Unknown attribute "nickname2" in the filter.', 'invalidFilter');
 */
export class ScimError extends Error {
  override readonly name = 'ScimError';
  constructor(
    readonly status: number,
    readonly detail: string,
    readonly scimType?: ScimType,
    readonly headers: Record<string, string> = {},
  ) {
    super(detail);
  }
}

/** A SCIM JSON response (`application/scim+json`). */
export function scimJson(body: unknown, init: { status?: number; headers?: Record<string, string> } = {}): LightResponse {
  return new LightResponse(JSON.stringify(body), {
    status: init.status ?? 200,
    headers: { 'content-type': `${SCIM_MEDIA_TYPE}; charset=utf-8`, 'cache-control': 'no-store', ...init.headers },
  });
}

/** The SCIM error response of an error. */
export function scimErrorResponse(error: ScimError): LightResponse {
  return scimJson(
    {
      schemas: [SCIM_ERROR_SCHEMA],
      status: String(error.status),
      ...(error.scimType ? { scimType: error.scimType } : {}),
      detail: error.detail,
    },
    { status: error.status, headers: error.headers },
  );
}

/**
 * Translates what SCIM code may raise into a {@link ScimError}: itself, a
 * problem error (status kept, `detail` or title as the detail), or a
 * `scim-patch` error (its `scimCode`, 400). Anything else is `undefined`:
 * a programming error the edge renders as a 500.
 */
export function asScimError(error: unknown): ScimError | undefined {
  if (error instanceof ScimError) return error;
  if (error instanceof UnauthorizedError) {
    return new ScimError(401, error.message || 'A valid SCIM bearer token is required.', undefined, {
      'www-authenticate': 'Bearer',
    });
  }
  if (error instanceof ProblemError) {
    const status = error.status;
    const detail = error.detail;
    const headers = { ...error.headers };
    if (error.code === 'Validation.Failed') {
      const fields = Object.entries(error.errors ?? {}).map(([field, messages]) => `${field}: ${messages.join(' ')}`);
      return new ScimError(400, fields.length > 0 ? fields.join('; ') : detail, 'invalidValue', headers);
    }
    return new ScimError(status, detail, undefined, headers);
  }
  if (error instanceof Error && typeof (error as { scimCode?: unknown }).scimCode === 'string') {
    return new ScimError(400, error.message, (error as unknown as { scimCode: string }).scimCode as ScimType);
  }
  return undefined;
}
