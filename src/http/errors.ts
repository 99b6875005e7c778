/**
 * The one registry of HTTP error codes (STYLE.md habit 4; DESIGN.md section 13). Every error that leaves the
 * application is an AppError with one of these codes; `normaliseError` turns anything thrown into one, once,
 * at the edge. Transient failures map to 503/429 with `Retry-After`, never to 500: Knative sources do not
 * retry a 500 (notes SERVERLESS-FACTS section 1.2).
 */

export const ERROR_CODES = [
  'unauthorized',
  'route-not-found',
  'unknown-object-kind',
  'namespace-not-watched',
  'unsupported-event-kind',
  'unsupported-event-type',
  'invalid-event',
  'invalid-request',
  'unsupported-media-type',
  'body-too-large',
  'redis-unavailable',
  'api-server-unavailable',
  'api-server-throttled',
  'shutting-down',
  'internal',
] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

/** One registry row: the HTTP status and, for transient codes, the `Retry-After` default in seconds. */
export interface ErrorRow {
  status: number;
  retryAfterSeconds?: number;
  /** Whether the caller should send the same request again later. */
  transient: boolean;
}

/** Code → HTTP status; a new code without its row does not compile (STYLE.md habit 3). */
export const ERROR_REGISTRY: Readonly<Record<ErrorCode, ErrorRow>> = {
  unauthorized: { status: 401, transient: false },
  'route-not-found': { status: 404, transient: false },
  'unknown-object-kind': { status: 404, transient: false },
  // CAPTF_WATCH_NAMESPACES: the object is another installation's, never this one's to step.
  'namespace-not-watched': { status: 404, transient: false },
  'unsupported-event-kind': { status: 400, transient: false },
  'unsupported-event-type': { status: 400, transient: false },
  'invalid-event': { status: 400, transient: false },
  'invalid-request': { status: 400, transient: false },
  'unsupported-media-type': { status: 415, transient: false },
  'body-too-large': { status: 413, transient: false },
  'redis-unavailable': { status: 503, retryAfterSeconds: 5, transient: true },
  'api-server-unavailable': { status: 503, retryAfterSeconds: 5, transient: true },
  'api-server-throttled': { status: 429, retryAfterSeconds: 5, transient: true },
  'shutting-down': { status: 503, retryAfterSeconds: 1, transient: true },
  // Only bugs end here: outages are typed (UnavailableError) before they reach the edge.
  internal: { status: 500, transient: false },
};

/** The one error class answered to HTTP callers; `cause` is always kept for the log. */
export class AppError extends Error {
  override readonly name = 'AppError';
  readonly code: ErrorCode;
  readonly status: number;
  readonly retryAfterSeconds: number | undefined;

  constructor(
    code: ErrorCode,
    message: string,
    options: { cause?: unknown; retryAfterSeconds?: number } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    const row = ERROR_REGISTRY[code];
    this.code = code;
    this.status = row.status;
    this.retryAfterSeconds = options.retryAfterSeconds ?? row.retryAfterSeconds;
  }
}

/** A dependency outage; adapters (or their wiring) throw this so the edge answers 503/429, never 500. */
export type Dependency = 'redis' | 'api-server';

/**
 * Thrown by injected ports (schedule, dedupe, owner resolver, listers) when Redis or the API server cannot
 * be reached or throttles us. Nothing was changed by the failed call.
 */
export class UnavailableError extends Error {
  override readonly name = 'UnavailableError';
  readonly dependency: Dependency;
  /** True for an API server 429 (TooManyRequests): answered as 429 rather than 503. */
  readonly throttled: boolean;
  readonly retryAfterSeconds: number | undefined;

  constructor(
    dependency: Dependency,
    message: string,
    options: { cause?: unknown; throttled?: boolean; retryAfterSeconds?: number } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.dependency = dependency;
    this.throttled = options.throttled ?? false;
    this.retryAfterSeconds = options.retryAfterSeconds;
  }
}

/** Fastify's own error codes that reach our error handler, and the registry code each becomes. */
const FASTIFY_CODES: Readonly<Record<string, ErrorCode>> = {
  FST_ERR_CTP_BODY_TOO_LARGE: 'body-too-large',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported-media-type',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'invalid-request',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'invalid-request',
  FST_ERR_CTP_INVALID_JSON_BODY: 'invalid-request',
  FST_ERR_CTP_INVALID_TYPE: 'invalid-request',
  FST_ERR_VALIDATION: 'invalid-request',
  // The router's own refusals (fastify's `frameworkErrors`): a bad percent-escape, an overlong segment.
  FST_ERR_BAD_URL: 'invalid-request',
  FST_ERR_MAX_PARAM_LENGTH: 'invalid-request',
};

/**
 * The router's messages quote the whole path (`'<path>' is not a valid url component`); untrusted text is
 * never echoed, so these say what was wrong in words of our own.
 */
const FASTIFY_MESSAGES: Readonly<Record<string, string>> = {
  FST_ERR_BAD_URL: 'read path: not a valid URL (a malformed percent-escape)',
  FST_ERR_MAX_PARAM_LENGTH: 'read path: a path segment is too long (names have at most 253 characters)',
};

/**
 * Turns anything thrown into an AppError, once, at the edge: AppError as is; UnavailableError → 503 (429
 * when throttled) with Retry-After; fastify's body errors → 4xx; everything else is a bug → 500.
 */
export function normaliseError(error: unknown): AppError {
  if (error instanceof AppError) return error;
  if (error instanceof UnavailableError) {
    const code: ErrorCode = error.throttled
      ? 'api-server-throttled'
      : error.dependency === 'redis'
        ? 'redis-unavailable'
        : 'api-server-unavailable';
    const options =
      error.retryAfterSeconds === undefined
        ? { cause: error }
        : { cause: error, retryAfterSeconds: error.retryAfterSeconds };
    return new AppError(code, `${error.dependency} unavailable: ${error.message}`, options);
  }
  if (error instanceof Error) {
    const fastifyCode = (error as Error & { code?: unknown }).code;
    if (typeof fastifyCode === 'string' && Object.hasOwn(FASTIFY_CODES, fastifyCode)) {
      const code = FASTIFY_CODES[fastifyCode] ?? 'invalid-request';
      const message = Object.hasOwn(FASTIFY_MESSAGES, fastifyCode)
        ? FASTIFY_MESSAGES[fastifyCode]
        : undefined;
      return new AppError(code, message ?? `read request: ${error.message}`, { cause: error });
    }
    return new AppError('internal', 'internal error', { cause: error });
  }
  return new AppError('internal', 'internal error', {
    cause: new Error(`non-Error thrown: ${String(error)}`),
  });
}
