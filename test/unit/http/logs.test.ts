import { describe, expect, it } from 'vitest';
import { binaryHeaders, T0, TOKEN, testApp } from './in-memory.ts';

const SECRET_VALUE = 'c3VwZXItc2VjcmV0LXBhc3N3b3Jk';

it('log lines are JSON objects with a request id and carry no token, Secret data or authorization header', async () => {
  const t = testApp();
  t.owners.owners.set('Pod/team-a/captf-run-x', {
    kind: 'TerraformCluster',
    namespace: 'team-a',
    name: 'c1',
  });
  await t.app.inject({
    method: 'POST',
    url: '/events',
    headers: binaryHeaders('dev.knative.apiserver.resource.update', { 'x-request-id': 'req-123' }),
    payload: JSON.stringify({
      // A payload carrying Secret-like values (no source sends Secrets since issue 16; any payload may
      // carry one): none of it reaches the log.
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'captf-run-x', namespace: 'team-a', labels: { 'captf.io/managed': 'true' } },
      data: { password: SECRET_VALUE },
      stringData: { token: SECRET_VALUE },
    }),
  });
  await t.app.inject({
    method: 'POST',
    url: '/events',
    headers: { authorization: 'Bearer wrong-token-value' },
  });
  expect(t.logs.lines.length).toBeGreaterThan(3);
  const joined = t.logs.raw.join('\n');
  expect(joined).not.toContain(SECRET_VALUE);
  expect(joined).not.toContain(TOKEN);
  expect(joined).not.toContain('wrong-token-value');
  expect(joined.toLowerCase()).not.toContain('"authorization"');
  const stepLine = t.logs.lines.find((line) => String(line.msg).startsWith('step '));
  expect(stepLine).toMatchObject({
    requestId: 'req-123',
    kind: 'TerraformCluster',
    name: 'c1',
    action: 'none',
  });
  for (const line of t.logs.lines) expect(line.requestId ?? line.service).toBeTruthy();
});

it('redacts secret-ish fields handed to the logger', () => {
  const t = testApp();
  t.deps.logger.info({ token: 'abc', nested: { password: 'p', data: { k: 'v' } } }, 'x');
  const line = t.logs.lines.at(-1);
  expect(line).toMatchObject({ token: '[redacted]', nested: { password: '[redacted]', data: '[redacted]' } });
});

it('a hostile x-request-id is replaced by a generated one', async () => {
  const t = testApp();
  const response = await t.app.inject({
    method: 'GET',
    url: '/healthz',
    headers: { 'x-request-id': 'a\u0001b'.repeat(40) },
  });
  expect(response.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
});

describe('one answer line per request; a tick that finds the system at rest writes nothing at info', () => {
  const INFO = 30;
  const tick = (t: ReturnType<typeof testApp>, id: string) =>
    t.app.inject({
      method: 'POST',
      url: '/tick',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json', 'x-request-id': id },
      payload: '{}',
    });
  const linesOf = (t: ReturnType<typeof testApp>, id: string) =>
    t.logs.lines.filter((line) => line.requestId === id);

  it('an idle tick (nothing due, no sweep) logs its answer at debug only', async () => {
    const t = testApp();
    expect((await tick(t, 'idle-1')).statusCode).toBe(200);
    const lines = linesOf(t, 'idle-1');
    expect(lines.map((line) => line.msg)).toEqual(['tick done', 'request completed']);
    expect(lines.filter((line) => Number(line.level) >= INFO)).toEqual([]);
  });

  it('a tick that steps an object logs its answer at info, with method, url and status', async () => {
    const t = testApp();
    await t.schedule.add({ kind: 'TerraformMachine', namespace: 'team-a', name: 'm-a' }, T0 - 1000);
    await tick(t, 'busy-1');
    const answer = linesOf(t, 'busy-1').find((line) => line.msg === 'request completed');
    expect(answer).toMatchObject({
      level: INFO,
      req: { method: 'POST', url: '/tick' },
      res: { statusCode: 200 },
    });
    expect(linesOf(t, 'busy-1').filter((line) => line.msg === 'incoming request')).toEqual([]);
  });

  it('an answer other than 2xx is at info even on the tick route', async () => {
    const t = testApp();
    await t.app.inject({
      method: 'POST',
      url: '/tick',
      headers: {
        authorization: `Bearer ${TOKEN}`,
        'content-type': 'application/json',
        'x-request-id': 'bad-1',
      },
      payload: 'not json',
    });
    expect(linesOf(t, 'bad-1').find((line) => line.msg === 'request completed')).toMatchObject({
      level: INFO,
      res: { statusCode: 400 },
    });
  });
});
