import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { expect, it } from 'vitest';
import { startTickTimer } from '../../../src/relay/timer.ts';

it('the local timer POSTs /tick with the bearer token on every interval and stops cleanly', async () => {
  const seen: Array<{ url: string | undefined; auth: string | undefined }> = [];
  let status = 503;
  const server = createServer((req, res) => {
    seen.push({ url: req.url, auth: req.headers.authorization });
    req.resume();
    res.writeHead(status).end('{}');
    status = 200;
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/tick`;
  const warnings: unknown[] = [];
  const stop = startTickTimer({
    url,
    token: 'timer-token',
    intervalMs: 100,
    timeoutMs: 1000,
    logger: { debug: () => undefined, warn: (o: unknown) => warnings.push(o) },
  });
  await sleep(550);
  await stop();
  // A request aborted by stop() may still reach the server; after that, no new tick may start.
  await sleep(150);
  const calls = seen.length;
  await sleep(400);
  server.close();
  expect(calls).toBeGreaterThanOrEqual(3);
  expect(seen).toHaveLength(calls);
  expect(seen.every((s) => s.url === '/tick' && s.auth === 'Bearer timer-token')).toBe(true);
  expect(warnings).toHaveLength(1);
});
