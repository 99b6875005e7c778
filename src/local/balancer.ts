import {
  Agent,
  createServer,
  type IncomingMessage,
  request,
  type Server,
  type ServerResponse,
} from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A loopback round-robin HTTP balancer for the local run with several handler processes
 * (`startLocalController({ handlers: N })`, the fleet bench): the relay and the timer send to one URL, as
 * they send to one Knative Service in production, and each request goes to the next handler in turn. It
 * forwards method, path, headers and body, and streams the answer back. A handler that refuses the
 * connection is answered 502 with `Retry-After` (the relay retries on 502, like Knative's sources), never
 * retried on another handler: the request may have reached the first one. Local use only: no TLS, no
 * health checks, no weights.
 */

/** A running balancer. */
export interface Balancer {
  /** `http://127.0.0.1:<port>`. */
  url: string;
  /** Requests forwarded to each upstream, in the order the upstreams were given. */
  forwarded(): number[];
  /** Stops listening and closes kept-alive connections. */
  close(): Promise<void>;
}

/** Starts a balancer on `port` (0: a free one) in front of `upstreams` (`http://host:port` each). */
export async function startBalancer(upstreams: readonly string[], port = 0): Promise<Balancer> {
  if (upstreams.length === 0) throw new Error('start balancer: no upstreams');
  const targets = upstreams.map((upstream) => new URL(upstream));
  const counts = targets.map(() => 0);
  // Keep-alive to each handler, as a Knative activator keeps its connections: no handshake per event.
  const agent = new Agent({ keepAlive: true, maxSockets: 64 });
  let next = 0;
  const forward = (incoming: IncomingMessage, answer: ServerResponse): void => {
    const index = next;
    next = (next + 1) % targets.length;
    counts[index] = (counts[index] ?? 0) + 1;
    const target = targets[index] as URL;
    const outgoing = request(
      {
        agent,
        hostname: target.hostname,
        port: target.port,
        method: incoming.method,
        path: incoming.url,
        headers: { ...incoming.headers, host: target.host },
      },
      (upstream) => {
        answer.writeHead(upstream.statusCode ?? 502, upstream.headers);
        upstream.pipe(answer);
      },
    );
    outgoing.on('error', (error) => {
      if (answer.headersSent) {
        answer.destroy(error);
        return;
      }
      answer.writeHead(502, { 'content-type': 'text/plain', 'retry-after': '1' });
      answer.end(`balancer: upstream ${target.host}: ${error.message}\n`);
    });
    incoming.pipe(outgoing);
  };
  const server: Server = createServer(forward);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  const address = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${address.port}`,
    forwarded: () => [...counts],
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      agent.destroy();
    },
  };
}
