/**
 * The error kinds of SPEC 7.2 and the HTTP status each one renders as.
 *
 * `PayloadTooLarge` (413) extends the table for size limits (uploads, log
 * batches) and `GatewayTimeout` (504) for a proxy whose upstream did not
 * answer in time (the BFF); every other kind is exactly the spec's.
 */
export const problemKinds = {
  Validation: 400,
  Unauthenticated: 401,
  Forbidden: 403,
  NotFound: 404,
  MethodNotAllowed: 405,
  Conflict: 409,
  PayloadTooLarge: 413,
  BusinessRule: 422,
  RateLimited: 429,
  Failure: 500,
  Unavailable: 503,
  GatewayTimeout: 504,
} as const;

/** One of the error kinds of SPEC 7.2. */
export type ProblemKind = keyof typeof problemKinds;

/** The HTTP status of an error kind. */
export function statusOfKind(kind: ProblemKind): number {
  return problemKinds[kind];
}

const reasonPhrases: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  402: 'Payment Required',
  403: 'Forbidden',
  404: 'Not Found',
  405: 'Method Not Allowed',
  406: 'Not Acceptable',
  408: 'Request Timeout',
  409: 'Conflict',
  410: 'Gone',
  411: 'Length Required',
  412: 'Precondition Failed',
  413: 'Content Too Large',
  414: 'URI Too Long',
  415: 'Unsupported Media Type',
  416: 'Range Not Satisfiable',
  417: 'Expectation Failed',
  421: 'Misdirected Request',
  422: 'Unprocessable Content',
  423: 'Locked',
  424: 'Failed Dependency',
  425: 'Too Early',
  426: 'Upgrade Required',
  428: 'Precondition Required',
  429: 'Too Many Requests',
  431: 'Request Header Fields Too Large',
  451: 'Unavailable For Legal Reasons',
  499: 'Client Closed Request',
  500: 'Internal Server Error',
  501: 'Not Implemented',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
  505: 'HTTP Version Not Supported',
};

/**
 * The reason phrase of an HTTP status (RFC 9110), used as a problem's `title`.
 *
 * @example
 * reasonPhrase(503); // 'Service Unavailable'
 */
export function reasonPhrase(status: number): string {
  return reasonPhrases[status] ?? (status >= 500 ? 'Server Error' : 'Client Error');
}
