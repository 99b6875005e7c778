// A baseline of bench/cold-start.bench.ts: a process that only imports @kubernetes/client-node (the import
// the unbundled handler pays most for) and answers every POST (`/events`, `/reconcile/...`) with node:http,
// no framework.
// `PORT=<port> node bench/lib/client-node-only.ts`.
import { createServer } from 'node:http';
import { KubeConfig } from '@kubernetes/client-node';

const loaded = typeof KubeConfig === 'function';
createServer((request, response) => {
  request.resume();
  request.on('end', () => {
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ handled: loaded, outcome: loaded ? { action: 'none' } : undefined }));
  });
}).listen(Number(process.env.PORT), '127.0.0.1');
