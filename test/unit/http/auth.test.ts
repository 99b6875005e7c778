import { describe, expect, it } from 'vitest';
import { jwtExpiryMs, REVIEW_CACHE_MAX_ENTRIES } from '../../../src/http/auth.ts';
import type { TokenReviews } from '../../../src/http/deps.ts';
import { UnavailableError } from '../../../src/http/errors.ts';
import { T0, TOKEN, testApp } from './in-memory.ts';

const mutating = [
  { id: 'events', name: 'POST /events', url: '/events' },
  { id: 'tick', name: 'POST /tick', url: '/tick' },
  { id: 'reconcile', name: 'POST /reconcile/…', url: '/reconcile/TerraformCluster/team-a/c1' },
];

const badHeaders = [
  { id: 'missing', name: 'no Authorization header', headers: {}, says: 'missing' },
  { id: 'wrong', name: 'a wrong token', headers: { authorization: 'Bearer nope' }, says: 'does not match' },
  {
    id: 'prefix',
    name: 'a prefix of the right token',
    headers: { authorization: `Bearer ${TOKEN.slice(0, 10)}` },
    says: 'does not match',
  },
  {
    id: 'longer',
    name: 'the right token plus a suffix',
    headers: { authorization: `Bearer ${TOKEN}x` },
    says: 'does not match',
  },
  { id: 'basic', name: 'a Basic header', headers: { authorization: `Basic ${TOKEN}` }, says: 'missing' },
];

const cases = mutating.flatMap((route) =>
  badHeaders.map((h) => ({ ...h, id: `${route.id}/${h.id}`, url: route.url })),
);

it.each(cases)('$id $name: 401 and no step', async ({ url, headers, says }) => {
  const t = testApp();
  const response = await t.app.inject({ method: 'POST', url, headers });
  expect(response.statusCode).toBe(401);
  expect(response.json().error).toMatchObject({ code: 'unauthorized' });
  expect(response.json().error.message).toContain(says);
  expect(t.calls).toEqual([]);
});

it.each(mutating)('$id $name with the right token passes auth', async ({ url }) => {
  const t = testApp();
  const response = await t.app.inject({ method: 'POST', url, headers: { authorization: `Bearer ${TOKEN}` } });
  expect(response.statusCode).not.toBe(401);
});

it('auth disabled by the explicit config flag lets a tokenless call through', async () => {
  const t = testApp({ config: { auth: { mode: 'disabled' } } });
  const response = await t.app.inject({ method: 'POST', url: '/reconcile/TerraformCluster/team-a/c1' });
  expect(response.statusCode).toBe(200);
});

it.each(['/healthz', '/readyz', '/metrics'])('GET %s needs no token', async (url) => {
  const t = testApp();
  expect((await t.app.inject({ method: 'GET', url })).statusCode).toBe(200);
});

it('CAPTF_METRICS_AUTH (a public endpoint): /metrics asks for the token of the other routes; health stays open', async () => {
  const t = testApp({ config: { metricsAuth: true } });
  const refused = await t.app.inject({ method: 'GET', url: '/metrics' });
  expect(refused.statusCode).toBe(401);
  expect(refused.json().error).toMatchObject({ code: 'unauthorized' });
  expect(
    (await t.app.inject({ method: 'GET', url: '/metrics', headers: { authorization: 'Bearer nope' } }))
      .statusCode,
  ).toBe(401);
  const allowed = await t.app.inject({
    method: 'GET',
    url: '/metrics',
    headers: { authorization: `Bearer ${TOKEN}` },
  });
  expect(allowed.statusCode).toBe(200);
  expect((await t.app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
});

describe('audience-bound tokens checked by TokenReview (issue 16)', () => {
  const AUDIENCE = 'captf.captf-system';
  const SOURCE = 'system:serviceaccount:captf-system:captf-objects-oidc-sources.knative.dev-apiserversource';
  /** A JWT-shaped token whose payload says it expires at `expSeconds`. */
  const jwt = (expSeconds: number, id = 'a') =>
    `h.${Buffer.from(JSON.stringify({ exp: expSeconds, jti: id })).toString('base64url')}.s`;

  type Known = Record<string, { audiences?: string[]; username?: string }>;
  /** A reviewer that knows `good` tokens (for AUDIENCE, by SOURCE) and counts its reviews. */
  function fakeReviews(good: Known) {
    const asked: Array<{ token: string; audiences: readonly string[] }> = [];
    const reviews: TokenReviews = {
      async review(token, audiences) {
        asked.push({ token, audiences });
        const known = good[token];
        if (known === undefined)
          return { authenticated: false, audiences: [], error: 'invalid bearer token' };
        return {
          authenticated: true,
          username: known.username ?? SOURCE,
          audiences: known.audiences ?? [AUDIENCE],
        };
      },
    };
    return { reviews, asked };
  }

  function oidcApp(reviews: TokenReviews, clock: () => number = () => T0, allowedUsers?: string[]) {
    return testApp({
      config: {
        auth: {
          mode: 'bearer',
          token: TOKEN,
          oidc: { audience: AUDIENCE, ...(allowedUsers ? { allowedUsers } : {}) },
        },
      },
      tokenReviews: reviews,
      clock,
    });
  }
  const tick = (t: ReturnType<typeof testApp>, token: string) =>
    t.app.inject({ method: 'POST', url: '/tick', headers: { authorization: `Bearer ${token}` } });

  it('a token the API server authenticates for our audience passes; the review asked for that audience', async () => {
    const token = jwt(T0 / 1000 + 3600);
    const { reviews, asked } = fakeReviews({ [token]: {} });
    const response = await tick(oidcApp(reviews), token);
    expect(response.statusCode).toBe(200);
    expect(asked).toEqual([{ token, audiences: [AUDIENCE] }]);
  });

  it.each<{ id: string; name: string; good: Known; says: string }>([
    { id: 'garbage', name: 'a token the API server refuses', good: {}, says: 'refused the bearer token' },
    {
      id: 'audience',
      name: 'a token valid only for another audience',
      good: { tok: { audiences: ['other'] } },
      says: `not for audience ${AUDIENCE}`,
    },
  ])('$id: $name is 401', async ({ good, says }) => {
    const { reviews } = fakeReviews(good);
    const t = oidcApp(reviews);
    const response = await tick(t, 'tok');
    expect(response.statusCode).toBe(401);
    expect(response.json().error.message).toContain(says);
    expect(t.calls).toEqual([]);
  });

  it('with allowed users, a token of any other ServiceAccount is 401', async () => {
    const { reviews } = fakeReviews({ tok: { username: 'system:serviceaccount:team-a:default' } });
    const response = await tick(
      oidcApp(reviews, () => T0, [SOURCE]),
      'tok',
    );
    expect(response.statusCode).toBe(401);
    expect(response.json().error.message).toContain('system:serviceaccount:team-a:default may not call');
  });

  it('the static token still passes without a review', async () => {
    const { reviews, asked } = fakeReviews({});
    expect((await tick(oidcApp(reviews), TOKEN)).statusCode).toBe(200);
    expect(asked).toEqual([]);
  });

  it('a positive answer is reused for 60 s, never past the token expiry; refusals are asked again', async () => {
    let now = T0;
    const lasting = jwt(T0 / 1000 + 3600, 'lasting');
    const brief = jwt(T0 / 1000 + 10, 'brief');
    const { reviews, asked } = fakeReviews({ [lasting]: {}, [brief]: {} });
    const t = oidcApp(reviews, () => now);
    for (const token of [lasting, lasting, brief, brief, 'bad', 'bad']) await tick(t, token);
    expect(asked.map((a) => a.token)).toEqual([lasting, brief, 'bad', 'bad']);
    now = T0 + 11_000;
    await tick(t, brief);
    await tick(t, lasting);
    expect(asked.map((a) => a.token).slice(4)).toEqual([brief]);
    now = T0 + 61_000;
    await tick(t, lasting);
    expect(asked.map((a) => a.token).slice(5)).toEqual([lasting]);
  });

  it('concurrent requests with one token share one review', async () => {
    const token = jwt(T0 / 1000 + 3600);
    const { reviews, asked } = fakeReviews({ [token]: {} });
    const t = oidcApp(reviews);
    const answers = await Promise.all([tick(t, token), tick(t, token), tick(t, token)]);
    expect(answers.map((r) => r.statusCode)).toEqual([200, 200, 200]);
    expect(asked).toHaveLength(1);
  });

  it('a failed review (API server down) is 503 with Retry-After, not 401', async () => {
    const reviews: TokenReviews = {
      review: async () => {
        throw new UnavailableError('api-server', 'create TokenReview: Unreachable');
      },
    };
    const response = await tick(oidcApp(reviews), 'tok');
    expect(response.statusCode).toBe(503);
    expect(response.headers['retry-after']).toBe('5');
  });

  it('keeps at most REVIEW_CACHE_MAX_ENTRIES answers, dropping the oldest first', async () => {
    const tokens = Array.from({ length: REVIEW_CACHE_MAX_ENTRIES + 1 }, (_, i) => `t${i}`);
    const { reviews, asked } = fakeReviews(Object.fromEntries(tokens.map((token) => [token, {}])));
    const t = oidcApp(reviews);
    for (const token of tokens) await tick(t, token);
    await tick(t, 't1');
    await tick(t, 't0');
    expect(asked.length).toBe(tokens.length + 1);
    expect(asked.at(-1)?.token).toBe('t0');
  });

  it('reads a JWT expiry, and nothing from what is not one', () => {
    expect(jwtExpiryMs(jwt(1_700_000_000))).toBe(1_700_000_000_000);
    expect(jwtExpiryMs('opaque-token')).toBeUndefined();
    expect(jwtExpiryMs('a.!!!.c')).toBeUndefined();
  });
});
