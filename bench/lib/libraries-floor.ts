// A baseline of bench/cold-start.bench.ts: the least a handler process that steps an object can be with the
// libraries the controller is built on, bundled and started exactly as the image starts the controller
// (esbuild bundle, Node's flags, a warm compile cache). `POST /events` reads the event's object with
// @kubernetes/client-node (one GET through the CustomObjectsApi the adapter uses, over the adapter's own
// connection code, src/adapters/kube/connection.ts, which keeps one TLS connection), sends one Redis
// command with ioredis, and answers 200 through fastify; `POST /reconcile/...` the same. No validation, no
// logging, no decision: what the controller's first answer takes beyond this one is its own code.
// `PORT=<port> KUBECONFIG=<path> REDIS_URL=<url> node <bundle of this file>`.
import Fastify from 'fastify';
import { Redis } from 'ioredis';
import { loadKubeConfig, makeKubeApis } from '../../src/adapters/kube/connection.ts';
import { RequestCounter } from '../../src/adapters/kube/request-count.ts';

// The controller's own words for a missing setting: the image's compile cache is warmed by starting each
// bundle without its environment until it stops there (images/tree.ts warmCompileCache).
if (!process.env.KUBECONFIG || !process.env.REDIS_URL) {
  process.stderr.write('read config: KUBECONFIG and REDIS_URL are required\n');
  process.exit(1);
}
const { custom } = makeKubeApis(loadKubeConfig({ kind: 'file', path: process.env.KUBECONFIG }), {
  requestTimeoutMs: 30_000,
  counter: new RequestCounter(),
});
const redis = new Redis(process.env.REDIS_URL ?? '');

/** One GET of the object and one Redis command: what the cheapest step pays the libraries. */
async function step(kind: string, namespace: string, name: string): Promise<void> {
  const object = (await custom.getNamespacedCustomObject({
    group: 'infrastructure.cluster.x-k8s.io',
    version: 'v1alpha1',
    namespace,
    plural: `${kind.toLowerCase()}s`,
    name,
  })) as { metadata?: { resourceVersion?: string } };
  await redis.set(`floor:${namespace}/${name}`, object.metadata?.resourceVersion ?? '');
}

interface Ref {
  kind: string;
  namespace: string;
  name: string;
}

const app = Fastify();
app.post<{ Body: Ref }>('/events', async (request) => {
  await step(request.body.kind, request.body.namespace, request.body.name);
  return { handled: true };
});
app.post<{ Params: Ref }>('/reconcile/:kind/:namespace/:name', async (request) => {
  await step(request.params.kind, request.params.namespace, request.params.name);
  return { outcome: { action: 'none' } };
});
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
