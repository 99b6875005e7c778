import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { AuthConfig, OidcAuthConfig } from '../config.ts';
import type { TokenReviewAnswer, TokenReviews } from './deps.ts';
import { AppError } from './errors.ts';

/**
 * Bearer-token auth of the mutating routes (DESIGN.md section 13, issue 16). Two kinds of token pass:
 * - the static token (CAPTF_AUTH_TOKEN): both sides are hashed to equal-length SHA-256 digests before
 *   `timingSafeEqual`, so neither the token nor its length leaks through timing;
 * - any other token when OIDC is configured: a TokenReview with `spec.audiences: [audience]` must find it
 *   authenticated, for that audience, and (if configured) of an allowed user. These are the tokens Knative
 *   sources send with `authentication-oidc` enabled: their own ServiceAccount's, minted for `sink.audience`.
 * A positive review is cached briefly (bounded, never past the token's own expiry), and concurrent requests
 * with one token share one review, so a stream of events costs one TokenReview per token and minute, not
 * one per event. Refusals are not cached: they are cheap
 * to repeat and a cached refusal could outlive the reason for it.
 */

/** How long a positive review is trusted at most; well below a projected token's lifetime (≥ 10 min). */
export const REVIEW_CACHE_TTL_MS = 60_000;
/** Tokens remembered at most: a few per source; the bound keeps a flood of distinct tokens harmless. */
export const REVIEW_CACHE_MAX_ENTRIES = 1024;

/** What the hook needs besides the configuration. */
export interface AuthDeps {
  /** Required when `auth.oidc` is set. */
  reviews?: TokenReviews;
  /** Milliseconds since the epoch. */
  clock: () => number;
}

/** The `onRequest` hook of the guarded routes: resolves, or throws an `unauthorized` AppError. */
export type AuthHook = (request: FastifyRequest) => Promise<void>;

/** Builds the `onRequest` hook; one per app, so the routes share its review cache. */
export function bearerAuthHook(auth: AuthConfig, deps: AuthDeps): AuthHook {
  if (auth.mode === 'disabled') return async () => undefined;
  const expected = auth.token === undefined ? undefined : digest(auth.token);
  const { oidc } = auth;
  if (oidc !== undefined && deps.reviews === undefined) {
    throw new Error('bearer auth: CAPTF_AUTH_AUDIENCE is set but no TokenReview client was given');
  }
  const review = oidc && deps.reviews ? reviewer(oidc, deps.reviews, deps.clock) : undefined;
  return async (request) => {
    const header = request.headers.authorization;
    const match = typeof header === 'string' ? /^Bearer (\S+)$/i.exec(header) : null;
    const presented = match?.[1];
    if (presented === undefined) {
      throw new AppError('unauthorized', 'authenticate: missing "Authorization: Bearer <token>" header');
    }
    const hashed = digest(presented);
    if (expected !== undefined && timingSafeEqual(hashed, expected)) return;
    if (review === undefined) throw new AppError('unauthorized', 'authenticate: bearer token does not match');
    await review(presented, hashed.toString('hex'));
  };
}

/** A cached TokenReview check; throws `unauthorized` for a refused token, rethrows a failed review. */
function reviewer(
  oidc: OidcAuthConfig,
  reviews: TokenReviews,
  clock: () => number,
): (token: string, key: string) => Promise<void> {
  // token digest → until when the positive answer holds; Map keeps insertion order, so the first key is the
  // oldest entry.
  const cache = new Map<string, number>();
  // Reviews under way: a burst of events with one token (a source replaying after a restart) asks once.
  const asking = new Map<string, Promise<TokenReviewAnswer>>();
  return async (token, key) => {
    const now = clock();
    const until = cache.get(key);
    if (until !== undefined && until > now) return;
    cache.delete(key);
    let pending = asking.get(key);
    if (pending === undefined) {
      pending = reviews.review(token, [oidc.audience]).finally(() => asking.delete(key));
      asking.set(key, pending);
    }
    const answer = await pending;
    if (!answer.authenticated) {
      const why = answer.error ? `: ${answer.error.slice(0, 200)}` : '';
      throw new AppError('unauthorized', `authenticate: the API server refused the bearer token${why}`);
    }
    if (!answer.audiences.includes(oidc.audience)) {
      throw new AppError(
        'unauthorized',
        `authenticate: the bearer token is not for audience ${oidc.audience}`,
      );
    }
    if (oidc.allowedUsers !== undefined && !oidc.allowedUsers.includes(answer.username ?? '')) {
      throw new AppError(
        'unauthorized',
        `authenticate: user ${(answer.username ?? '(none)').slice(0, 200)} may not call the handlers`,
      );
    }
    const expiresMs = jwtExpiryMs(token);
    const holdUntil = Math.min(now + REVIEW_CACHE_TTL_MS, expiresMs ?? Number.POSITIVE_INFINITY);
    if (holdUntil <= now) return;
    if (cache.size >= REVIEW_CACHE_MAX_ENTRIES) {
      const oldest = cache.keys().next().value;
      if (oldest !== undefined) cache.delete(oldest);
    }
    cache.set(key, holdUntil);
  };
}

/**
 * The `exp` claim of a JWT, in milliseconds, read without verifying the signature: only to keep a cached
 * answer from outliving the token, after the API server has verified it. Undefined when the token is not a
 * JWT or has no numeric `exp`.
 */
export function jwtExpiryMs(token: string): number | undefined {
  const payload = token.split('.')[1];
  if (payload === undefined) return undefined;
  try {
    const claims: unknown = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
    const exp = (claims as { exp?: unknown } | null)?.exp;
    return typeof exp === 'number' && Number.isFinite(exp) ? exp * 1000 : undefined;
  } catch {
    return undefined;
  }
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}
