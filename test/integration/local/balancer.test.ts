import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, expect, it } from 'vitest';
import { type Balancer, startBalancer } from '../../../src/local/balancer.ts';
import { freePort } from '../../../src/local/ports.ts';

// The loopback balancer of the local run with several handler processes (src/local/balancer.ts), over real
// HTTP servers standing in for the handlers: round robin, the request forwarded whole, the answer streamed
// back, and a refused connection answered 502 with Retry-After (what the relay retries on).

const servers: Server[] = [];
let balancer: Balancer | undefined;

afterEach(async () => {
  await balancer?.close();
  balancer = undefined;
  for (const server of servers.splice(0)) await new Promise((resolve) => server.close(resolve));
});

/** Connections each upstream accepted, by name. */
const connections = new Map<string, number>();

/** An upstream that answers with its name and what it received (after `?delay=ms`, when given). */
async function upstream(name: string): Promise<string> {
  const server = createServer((request, response) => {
    const delay = Number(new URL(request.url ?? '/', 'http://x').searchParams.get('delay') ?? 0);
    let body = '';
    request.on('data', (chunk: Buffer) => {
      body += chunk.toString();
    });
    request.on('end', async () => {
      await sleep(delay);
      response.writeHead(201, { 'content-type': 'application/json', 'x-upstream': name });
      response.end(
        JSON.stringify({
          name,
          method: request.method,
          url: request.url,
          auth: request.headers.authorization,
          ceType: request.headers['ce-type'],
          body,
        }),
      );
    });
  });
  server.on('connection', () => connections.set(name, (connections.get(name) ?? 0) + 1));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  servers.push(server);
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

it('sends each request to the next upstream in turn, forwarding method, path, headers and body', async () => {
  balancer = await startBalancer([await upstream('a'), await upstream('b'), await upstream('c')]);
  const answers = [];
  for (let i = 0; i < 7; i += 1) {
    const response = await fetch(`${balancer.url}/events?n=${i}`, {
      method: 'POST',
      headers: { authorization: 'Bearer t', 'ce-type': 'dev.knative.apiserver.ref.update' },
      body: `{"i":${i}}`,
    });
    expect(response.status).toBe(201);
    expect(response.headers.get('x-upstream')).toBeTruthy();
    answers.push((await response.json()) as Record<string, string>);
  }
  expect(answers.map((answer) => answer.name)).toEqual(['a', 'b', 'c', 'a', 'b', 'c', 'a']);
  expect(answers[4]).toEqual({
    name: 'b',
    method: 'POST',
    url: '/events?n=4',
    auth: 'Bearer t',
    ceType: 'dev.knative.apiserver.ref.update',
    body: '{"i":4}',
  });
  expect(balancer.forwarded()).toEqual([3, 2, 2]);
});

it('a refused connection (the request never arrived) goes to the next upstream; all refusing: 502 with Retry-After', async () => {
  const down = `http://127.0.0.1:${await freePort()}`;
  balancer = await startBalancer([down, await upstream('up')]);
  for (let i = 0; i < 3; i += 1) {
    const served = await fetch(`${balancer.url}/tick`, { method: 'POST', body: `{"i":${i}}` });
    expect(served.status).toBe(201);
    expect(((await served.json()) as { name: string; body: string }).name).toBe('up');
  }
  expect(balancer.forwarded()).toEqual([0, 3]);
  await balancer.close();
  let upstreams = [down];
  balancer = await startBalancer(() => upstreams);
  const refused = await fetch(`${balancer.url}/tick`, { method: 'POST' });
  expect(refused.status).toBe(502);
  expect(refused.headers.get('retry-after')).toBe('1');
  await refused.text();
  // The list is read at each request: a restarted handler on a new port is used at once.
  upstreams = [await upstream('restarted')];
  const served = await fetch(`${balancer.url}/tick`, { method: 'POST' });
  expect(((await served.json()) as { name: string }).name).toBe('restarted');
});

it('closes a connection to a handler once idle, before the handler would, and never cuts a slow answer', async () => {
  balancer = await startBalancer([await upstream('idle')], { idleUpstreamMs: 300 });
  const call = async (query = '') => {
    const response = await fetch(`${balancer?.url}/events${query}`, { method: 'POST', body: '{}' });
    expect(response.status).toBe(201);
    await response.text();
  };
  await call();
  await call();
  // Kept alive between back-to-back requests.
  expect(connections.get('idle')).toBe(1);
  await sleep(800);
  // Idle past the limit: closed by the balancer, so the next request opens a fresh connection.
  await call();
  expect(connections.get('idle')).toBe(2);
  // An answer slower than the idle limit is waited for, not cut.
  await call('?delay=700');
  expect(connections.get('idle')).toBe(2);
});
