import { expect, it } from 'vitest';
import { TOKEN, testApp } from './in-memory.ts';

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
