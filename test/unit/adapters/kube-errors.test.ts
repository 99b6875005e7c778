import { ApiException } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import {
  KUBE_ERROR_CODES,
  KUBE_ERROR_TABLE,
  KubeError,
  type KubeErrorCode,
  outcomeOfFailedWrite,
  toKubeError,
  type WriteOutcome,
} from '../../../src/adapters/kube/errors.ts';

/** A `metav1.Status` body as the API server sends it (client-node 2.x hands it over as a raw string). */
function statusBody(code: number, reason: string): string {
  return JSON.stringify({
    kind: 'Status',
    apiVersion: 'v1',
    status: 'Failure',
    message: `${reason} happened`,
    reason,
    code,
  });
}

const rows: {
  id: string;
  name: string;
  status: number;
  reason: string;
  code: KubeErrorCode;
  outcome: WriteOutcome;
}[] = [
  {
    id: 'E01',
    name: '409 AlreadyExists: the name is taken',
    status: 409,
    reason: 'AlreadyExists',
    code: 'AlreadyExists',
    outcome: 'exists',
  },
  {
    id: 'E02',
    name: '409 Conflict: stale resourceVersion',
    status: 409,
    reason: 'Conflict',
    code: 'Conflict',
    outcome: 'rejected',
  },
  { id: 'E03', name: '404 NotFound', status: 404, reason: 'NotFound', code: 'NotFound', outcome: 'rejected' },
  {
    id: 'E04',
    name: '410 Expired continue token',
    status: 410,
    reason: 'Expired',
    code: 'Gone',
    outcome: 'rejected',
  },
  {
    id: 'E05',
    name: '422 Invalid spec',
    status: 422,
    reason: 'Invalid',
    code: 'Invalid',
    outcome: 'rejected',
  },
  {
    id: 'E06',
    name: '400 BadRequest',
    status: 400,
    reason: 'BadRequest',
    code: 'BadRequest',
    outcome: 'rejected',
  },
  {
    id: 'E07',
    name: '401 Unauthorized',
    status: 401,
    reason: 'Unauthorized',
    code: 'Unauthorized',
    outcome: 'rejected',
  },
  {
    id: 'E08',
    name: '403 Forbidden',
    status: 403,
    reason: 'Forbidden',
    code: 'Forbidden',
    outcome: 'rejected',
  },
  {
    id: 'E09',
    name: '429 TooManyRequests proves nothing',
    status: 429,
    reason: 'TooManyRequests',
    code: 'TooManyRequests',
    outcome: 'unknown',
  },
  {
    id: 'E10',
    name: '500 InternalError proves nothing',
    status: 500,
    reason: 'InternalError',
    code: 'ServerError',
    outcome: 'unknown',
  },
  {
    id: 'E11',
    name: '500 ServerTimeout is a timeout',
    status: 500,
    reason: 'ServerTimeout',
    code: 'Timeout',
    outcome: 'unknown',
  },
  { id: 'E12', name: '504 Timeout', status: 504, reason: 'Timeout', code: 'Timeout', outcome: 'unknown' },
  {
    id: 'E13',
    name: '503 ServiceUnavailable',
    status: 503,
    reason: 'ServiceUnavailable',
    code: 'ServerError',
    outcome: 'unknown',
  },
  {
    id: 'E14',
    name: '415 UnsupportedMediaType is a refused request',
    status: 415,
    reason: 'UnsupportedMediaType',
    code: 'BadRequest',
    outcome: 'rejected',
  },
];

describe('toKubeError', () => {
  it.each(rows)('$id $name', ({ status, reason, code, outcome }) => {
    const cause = new ApiException(status, 'Unknown API Status Code!', statusBody(status, reason), {});
    const error = toKubeError(cause, 'create Job team-a/j1');
    expect({
      code: error.code,
      httpStatus: error.httpStatus,
      reason: error.reason,
      outcome: error.outcome,
    }).toEqual({
      code,
      httpStatus: status,
      reason,
      outcome,
    });
    expect(error.cause).toBe(cause);
    expect(error.message).toBe(`create Job team-a/j1: ${code} (${status}): ${reason} happened`);
  });

  it('reads the Status from a Buffer body and from an already parsed body', () => {
    const fromBuffer = toKubeError(
      new ApiException(409, 'x', Buffer.from(statusBody(409, 'AlreadyExists')), {}),
      'a',
    );
    const fromObject = toKubeError(
      new ApiException(409, 'x', JSON.parse(statusBody(409, 'AlreadyExists')), {}),
      'a',
    );
    expect([fromBuffer.code, fromObject.code]).toEqual(['AlreadyExists', 'AlreadyExists']);
  });

  it('a 409 whose body is not JSON is a Conflict (never mistaken for AlreadyExists)', () => {
    expect(toKubeError(new ApiException(409, 'x', '<html>', {}), 'a').code).toBe('Conflict');
  });

  it('keeps Retry-After in seconds', () => {
    const error = toKubeError(
      new ApiException(429, 'x', statusBody(429, 'TooManyRequests'), { 'retry-after': '3' }),
      'a',
    );
    expect(error.retryAfterSeconds).toBe(3);
  });

  it('an aborted request (per-request timeout) is Timeout without an HTTP status', () => {
    const error = toKubeError(
      new DOMException('The operation was aborted due to timeout', 'TimeoutError'),
      'a',
    );
    expect([error.code, error.httpStatus, error.outcome]).toEqual(['Timeout', undefined, 'unknown']);
  });

  it('a refused connection is Unavailable, with the transport cause in the message', () => {
    const cause = new TypeError('fetch failed', { cause: new Error('connect ECONNREFUSED 127.0.0.1:1') });
    const error = toKubeError(cause, 'get Job team-a/j1');
    expect([error.code, error.outcome, error.outage]).toEqual(['Unavailable', 'unknown', true]);
    expect(error.message).toBe('get Job team-a/j1: Unavailable: connect ECONNREFUSED 127.0.0.1:1');
  });

  it("keeps the types of the Status's details.causes (a create in a namespace being deleted)", () => {
    // As kube-apiserver 1.36 answers (its NamespaceLifecycle admission): a cause's type is its `reason`.
    const body = JSON.stringify({
      kind: 'Status',
      status: 'Failure',
      reason: 'Forbidden',
      code: 403,
      message:
        'jobs "j1" is forbidden: unable to create new content in namespace team-a because it is being terminated',
      details: {
        name: 'j1',
        kind: 'jobs',
        causes: [
          {
            reason: 'NamespaceTerminating',
            message: 'namespace team-a is being terminated',
            field: 'metadata.namespace',
          },
          { message: 'a cause without a type' },
          { reason: 7 },
        ],
      },
    });
    const error = toKubeError(new ApiException(403, 'Forbidden', body, {}), 'create Job team-a/j1');
    expect([error.code, error.causes]).toEqual(['Forbidden', ['NamespaceTerminating']]);
    expect(
      toKubeError(new ApiException(403, 'Forbidden', statusBody(403, 'Forbidden'), {}), 'x').causes,
    ).toEqual([]);
  });

  it('passes a KubeError through unchanged', () => {
    const error = new KubeError('NotFound', 'get x: NotFound', { cause: undefined, httpStatus: 404 });
    expect(toKubeError(error, 'other')).toBe(error);
  });
});

describe('the error registry', () => {
  it('has one row per code, and only 400/401/403/404/409/410/422 answers count as "nothing was written"', () => {
    expect(Object.keys(KUBE_ERROR_TABLE).sort()).toEqual([...KUBE_ERROR_CODES].sort());
    const rejected = KUBE_ERROR_CODES.filter((code) => KUBE_ERROR_TABLE[code].outcome === 'rejected')
      .map((code) => KUBE_ERROR_TABLE[code].httpStatus)
      .sort();
    expect(rejected).toEqual([400, 401, 403, 404, 409, 410, 422]);
  });

  it('every outage is an unknown outcome (an outage never proves a write failed)', () => {
    for (const code of KUBE_ERROR_CODES) {
      if (KUBE_ERROR_TABLE[code].outage) expect(KUBE_ERROR_TABLE[code].outcome).toBe('unknown');
    }
  });

  it('anything that is not a KubeError reads as unknown', () => {
    expect(outcomeOfFailedWrite(new Error('bug'))).toBe('unknown');
  });
});
