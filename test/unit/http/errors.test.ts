import { describe, expect, it } from 'vitest';
import {
  AppError,
  ERROR_CODES,
  ERROR_REGISTRY,
  normaliseError,
  UnavailableError,
} from '../../../src/http/errors.ts';

describe('error registry', () => {
  it('has exactly one row per code, and no row without a code', () => {
    expect(Object.keys(ERROR_REGISTRY).sort()).toEqual([...ERROR_CODES].sort());
  });

  it.each(ERROR_CODES.map((code) => ({ code, ...ERROR_REGISTRY[code] })))(
    '$code: a 4xx/5xx status; transient codes answer 429/503 with Retry-After',
    ({ status, transient, retryAfterSeconds }) => {
      expect(status).toBeGreaterThanOrEqual(400);
      expect(status).toBeLessThan(600);
      if (transient) {
        expect([429, 503]).toContain(status);
        expect(retryAfterSeconds).toBeGreaterThan(0);
      }
    },
  );

  it('only `internal` (bugs) maps to 500', () => {
    expect(ERROR_CODES.filter((code) => ERROR_REGISTRY[code].status === 500)).toEqual(['internal']);
  });
});

describe('normaliseError', () => {
  const rows = [
    {
      id: 'redis',
      name: 'Redis outage → 503',
      error: new UnavailableError('redis', 'connect ECONNREFUSED'),
      code: 'redis-unavailable',
      status: 503,
    },
    {
      id: 'api',
      name: 'API server outage → 503',
      error: new UnavailableError('api-server', 'socket hang up'),
      code: 'api-server-unavailable',
      status: 503,
    },
    {
      id: 'throttled',
      name: 'API server 429 → 429',
      error: new UnavailableError('api-server', 'too many requests', {
        throttled: true,
        retryAfterSeconds: 7,
      }),
      code: 'api-server-throttled',
      status: 429,
    },
    {
      id: 'fastify-size',
      name: 'fastify body too large → 413',
      error: Object.assign(new Error('too large'), { code: 'FST_ERR_CTP_BODY_TOO_LARGE' }),
      code: 'body-too-large',
      status: 413,
    },
    {
      id: 'bug',
      name: 'a plain Error (a bug) → 500',
      error: new TypeError('x is undefined'),
      code: 'internal',
      status: 500,
    },
    {
      id: 'non-error',
      name: 'a thrown string → 500 with an Error cause',
      error: 'boom',
      code: 'internal',
      status: 500,
    },
  ];

  it.each(rows)('$id $name', ({ error, code, status }) => {
    const normalised = normaliseError(error);
    expect(normalised).toBeInstanceOf(AppError);
    expect(normalised.code).toBe(code);
    expect(normalised.status).toBe(status);
    expect(normalised.cause).toBeInstanceOf(Error);
  });

  it('keeps a Retry-After named by the outage', () => {
    const error = new UnavailableError('api-server', 'slow down', { throttled: true, retryAfterSeconds: 7 });
    expect(normaliseError(error).retryAfterSeconds).toBe(7);
  });

  it('passes an AppError through unchanged', () => {
    const error = new AppError('invalid-request', 'read path: bad');
    expect(normaliseError(error)).toBe(error);
  });
});
