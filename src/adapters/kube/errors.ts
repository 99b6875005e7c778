import { ApiException } from '@kubernetes/client-node';

/**
 * The one error the Kubernetes adapter throws (STYLE.md habits 4 and 5): every API answer that is not a
 * success is normalised here, once, into a closed set of codes, with the HTTP status and the original
 * error kept. The step branches on `code` (and on `outcomeOfFailedWrite`), never on messages.
 */

/** What the API server (or the transport) said, in one word. */
export const KUBE_ERROR_CODES = [
  'AlreadyExists',
  'Conflict',
  'NotFound',
  'Gone',
  'Invalid',
  'BadRequest',
  'Unauthorized',
  'Forbidden',
  'TooManyRequests',
  'Timeout',
  'ServerError',
  'Unavailable',
] as const;
export type KubeErrorCode = (typeof KUBE_ERROR_CODES)[number];

/**
 * What a failed write proves about the world (DESIGN.md section 5 step 8):
 * - `rejected`: the server refused the request before storing anything, so the object was not written;
 * - `exists`: the object (a create's target name) is already there;
 * - `unknown`: the request may or may not have been applied (timeout, 5xx, transport cut mid-flight).
 */
export type WriteOutcome = 'rejected' | 'exists' | 'unknown';

interface KubeErrorRow {
  /** The HTTP status the API server uses for this code; undefined when no answer arrived. */
  httpStatus: number | undefined;
  outcome: WriteOutcome;
  /** True when the failure is an outage (answer 503/429 upstream and retry), not a verdict on the request. */
  outage: boolean;
}

/** One row per code; a new code without its row does not compile (STYLE.md habit 3). */
export const KUBE_ERROR_TABLE: Record<KubeErrorCode, KubeErrorRow> = {
  AlreadyExists: { httpStatus: 409, outcome: 'exists', outage: false },
  Conflict: { httpStatus: 409, outcome: 'rejected', outage: false },
  NotFound: { httpStatus: 404, outcome: 'rejected', outage: false },
  Gone: { httpStatus: 410, outcome: 'rejected', outage: false },
  Invalid: { httpStatus: 422, outcome: 'rejected', outage: false },
  BadRequest: { httpStatus: 400, outcome: 'rejected', outage: false },
  Unauthorized: { httpStatus: 401, outcome: 'rejected', outage: false },
  Forbidden: { httpStatus: 403, outcome: 'rejected', outage: false },
  // DESIGN.md section 5 lists only 400/403/404/422 as proof that nothing was created; a 429 is not in that
  // list, so it keeps the leases like any other answer that proves nothing.
  TooManyRequests: { httpStatus: 429, outcome: 'unknown', outage: true },
  Timeout: { httpStatus: 504, outcome: 'unknown', outage: true },
  ServerError: { httpStatus: 500, outcome: 'unknown', outage: true },
  Unavailable: { httpStatus: undefined, outcome: 'unknown', outage: true },
};

/** A failed Kubernetes API request, normalised. `cause` is the client's original error. */
export class KubeError extends Error {
  override readonly name = 'KubeError';
  readonly code: KubeErrorCode;
  /** The HTTP status received; undefined when no answer arrived (timeout, refused connection). */
  readonly httpStatus: number | undefined;
  /** The API server's `Status.reason` when it sent one (e.g. `AlreadyExists`, `Expired`). */
  readonly reason: string | undefined;
  /** `Retry-After` in seconds when the server sent one (429, some 5xx). */
  readonly retryAfterSeconds: number | undefined;
  /**
   * The types of the Status body's `details.causes` (e.g. `NamespaceTerminating`, which the API server's
   * NamespaceLifecycle admission adds to a create refused in a namespace being deleted); empty when none.
   * On the wire a cause's type is its `reason` field (metav1.StatusCause).
   */
  readonly causes: readonly string[];

  constructor(
    code: KubeErrorCode,
    message: string,
    options: {
      cause: unknown;
      httpStatus?: number;
      reason?: string;
      retryAfterSeconds?: number;
      causes?: readonly string[];
    },
  ) {
    super(message, { cause: options.cause });
    this.code = code;
    this.httpStatus = options.httpStatus;
    this.reason = options.reason;
    this.retryAfterSeconds = options.retryAfterSeconds;
    this.causes = options.causes ?? [];
  }

  /** What this failure proves about a write: see `WriteOutcome`. */
  get outcome(): WriteOutcome {
    return KUBE_ERROR_TABLE[this.code].outcome;
  }

  /** True for outages (timeout, 5xx, 429, unreachable): the caller answers "unavailable" and retries. */
  get outage(): boolean {
    return KUBE_ERROR_TABLE[this.code].outage;
  }
}

/** True when `error` is a KubeError with one of `codes`. */
export function isKubeError(error: unknown, ...codes: KubeErrorCode[]): error is KubeError {
  return error instanceof KubeError && (codes.length === 0 || codes.includes(error.code));
}

/**
 * DESIGN.md section 5 step 8 in one call: 'rejected' (400/401/403/404/409-Conflict/410/422, nothing was
 * written), 'exists' (AlreadyExists) or 'unknown' (timeout, 429, 5xx, transport; the write may have landed).
 * Anything that is not a KubeError is a bug in the caller and reads as 'unknown' (never as proof).
 */
export function outcomeOfFailedWrite(error: unknown): WriteOutcome {
  return error instanceof KubeError ? error.outcome : 'unknown';
}

/** The fields of a `metav1.Status` body we use. */
interface StatusBody {
  reason?: string;
  message?: string;
  /** `details.causes[].reason`: each cause's type. */
  causes: string[];
}

/**
 * The cause types of a Status body's `details`, skipping anything that is not one. metav1.StatusCause
 * serialises its `Type` as `reason` (seen on kube-apiserver 1.36: `{"reason":"NamespaceTerminating",…}`).
 */
function causeTypesOf(details: unknown): string[] {
  if (typeof details !== 'object' || details === null) return [];
  const causes = Reflect.get(details, 'causes');
  if (!Array.isArray(causes)) return [];
  return causes.flatMap((cause: unknown) => {
    const type = typeof cause === 'object' && cause !== null ? Reflect.get(cause, 'reason') : undefined;
    return typeof type === 'string' ? [type] : [];
  });
}

/** Parses the API server's `Status` body, which client-node 2.x hands over as a raw JSON string or Buffer. */
function parseStatusBody(body: unknown): StatusBody {
  let value: unknown = body;
  if (Buffer.isBuffer(value)) value = value.toString('utf8');
  if (typeof value === 'string') {
    try {
      value = JSON.parse(value);
    } catch {
      return { causes: [] };
    }
  }
  if (typeof value !== 'object' || value === null) return { causes: [] };
  const reason = Reflect.get(value, 'reason');
  const message = Reflect.get(value, 'message');
  return {
    reason: typeof reason === 'string' ? reason : undefined,
    message: typeof message === 'string' ? message : undefined,
    causes: causeTypesOf(Reflect.get(value, 'details')),
  };
}

/** Maps an HTTP status and the Status reason to a code; the reason decides between the two 409s. */
function codeOfStatus(httpStatus: number, reason: string | undefined): KubeErrorCode {
  switch (httpStatus) {
    case 400:
      return 'BadRequest';
    case 401:
      return 'Unauthorized';
    case 403:
      return 'Forbidden';
    case 404:
      return 'NotFound';
    case 409:
      return reason === 'AlreadyExists' ? 'AlreadyExists' : 'Conflict';
    case 410:
      return 'Gone';
    case 422:
      return 'Invalid';
    case 429:
      return 'TooManyRequests';
    case 504:
      return 'Timeout';
  }
  if (httpStatus >= 500)
    return reason === 'Timeout' || reason === 'ServerTimeout' ? 'Timeout' : 'ServerError';
  // Other 4xx (405, 406, 413, 415 …): the request itself was refused.
  return 'BadRequest';
}

function retryAfterOf(headers: Record<string, string> | undefined): number | undefined {
  const raw = headers?.['retry-after'];
  if (raw === undefined) return undefined;
  const seconds = Number(raw);
  return Number.isFinite(seconds) && seconds >= 0 ? seconds : undefined;
}

/** True for the abort raised by the per-request timeout (a `TimeoutError`, connection.ts). */
function isTimeoutAbort(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  if (error.name === 'TimeoutError') return true;
  return error.cause instanceof Error && error.cause.name === 'TimeoutError';
}

/**
 * Normalises anything a client-node call threw into a KubeError; `action` names the request for the message
 * ("create Job team-a/j1"). Already-normalised errors pass through unchanged.
 */
export function toKubeError(error: unknown, action: string): KubeError {
  if (error instanceof KubeError) return error;
  if (error instanceof ApiException) {
    const status = parseStatusBody(error.body);
    const code = codeOfStatus(error.code, status.reason);
    return new KubeError(code, `${action}: ${code} (${error.code}): ${status.message ?? 'no message'}`, {
      cause: error,
      httpStatus: error.code,
      reason: status.reason,
      retryAfterSeconds: retryAfterOf(error.headers),
      causes: status.causes,
    });
  }
  if (isTimeoutAbort(error)) {
    return new KubeError('Timeout', `${action}: Timeout: no answer within the request timeout`, {
      cause: error,
    });
  }
  const detail =
    error instanceof Error ? (error.cause instanceof Error ? error.cause.message : error.message) : '';
  return new KubeError('Unavailable', `${action}: Unavailable: ${detail || String(error)}`, { cause: error });
}
