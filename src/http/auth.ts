import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { AuthConfig } from '../config.ts';
import { AppError } from './errors.ts';

/**
 * Bearer-token auth of the mutating routes (DESIGN.md section 13). Both sides are hashed to equal-length
 * SHA-256 digests before `timingSafeEqual`, so neither the token nor its length leaks through timing.
 */
export function bearerAuthHook(auth: AuthConfig): (request: FastifyRequest) => Promise<void> {
  if (auth.mode === 'disabled') return async () => undefined;
  const expected = digest(auth.token);
  return async (request) => {
    const header = request.headers.authorization;
    const match = typeof header === 'string' ? /^Bearer (\S+)$/i.exec(header) : null;
    const presented = match?.[1];
    if (presented === undefined) {
      throw new AppError('unauthorized', 'authenticate: missing "Authorization: Bearer <token>" header');
    }
    if (!timingSafeEqual(digest(presented), expected)) {
      throw new AppError('unauthorized', 'authenticate: bearer token does not match');
    }
  };
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}
