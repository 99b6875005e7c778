import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect, it } from 'vitest';
import { nodeHandler } from '../../../functions/handler.ts';
import { binaryHeaders, TOKEN, testApp } from '../../unit/http/in-memory.ts';

// The (req, res) adapter behind a real Node HTTP server: real sockets, real body limits.

it('a Node (req, res) platform serves the app: routes, auth, body cap', async () => {
  const t = testApp();
  const server = createServer(nodeHandler(t.app));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  try {
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    const ok = await fetch(`${base}/reconcile/TerraformCluster/team-a/c1`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(ok.status).toBe(200);
    const oversize = await fetch(`${base}/events`, {
      method: 'POST',
      headers: binaryHeaders('dev.knative.apiserver.ref.add'),
      body: 'x'.repeat(200 * 1024),
    });
    expect(oversize.status).toBe(413);
    expect(((await oversize.json()) as { error: { code: string } }).error.code).toBe('body-too-large');
  } finally {
    server.close();
    await t.app.close();
  }
});
