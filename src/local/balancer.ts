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
 * A loopback round-robin HTTP balancer for local runs with several handler processes
 * (`startLocalController({ handlers: N })`, the fleet bench, the fault suite): the relay and the timer send
 * to one URL, as they send to one Knative Service in production, and each request goes to the next handler
 * in turn. It forwards method, path, headers and body, and streams the answer back. A handler that refuses
 * the connection (killed, not yet restarted) never saw the request, so the next one is tried, as a load
 * balancer's connect retry does; when every handler refuses for a few rounds, or one fails after the
 * connection, the answer is 502 with `Retry-After` (the relay and Knative's sources retry it), never a
 * second delivery of a request that may have arrived. Local use only: no TLS, no health checks, no weights.
 */

/** A running balancer. */
export interface Balancer {
  /** `http://127.0.0.1:<port>`. */
  url: string;
  /** Requests forwarded to each upstream slot, in the order the upstreams are listed. */
  forwarded(): number[];
  /** Stops listening and closes kept-alive connections. */
  close(): Promise<void>;
}

/** Rounds over every upstream before a refused request is answered 502. */
const REFUSED_ROUNDS = 3;
/** Pause between rounds when every upstream refused (restarts in progress), ms. */
const ROUND_PAUSE_MS = 300;
/** Default idle time after which a kept-alive connection to a handler is closed, ms (below fastify's 72 s). */
const IDLE_UPSTREAM_MS = 30_000;

/** Reads a request body whole: a refused connection may be retried on the next upstream. */
async function bodyOf(incoming: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of incoming) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** Where a balancer listens and how long it keeps an idle connection to a handler. */
export interface BalancerOptions {
  /** Port on 127.0.0.1; default 0 (a free one). */
  port?: number;
  /** Idle time in ms after which a kept-alive connection to a handler is closed; default 30 s. */
  idleUpstreamMs?: number;
}

/**
 * Starts a balancer in front of `upstreams` (`http://host:port` each), or a function that lists them at
 * each request (a supervisor restarting handlers may change them).
 */
export async function startBalancer(
  upstreams: readonly string[] | (() => readonly string[]),
  options: BalancerOptions = {},
): Promise<Balancer> {
  const list = typeof upstreams === 'function' ? upstreams : () => upstreams;
  if (list().length === 0) throw new Error('start balancer: no upstreams');
  const counts: number[] = [];
  // Keep-alive to each handler, as a Knative activator keeps its connections: no handshake per event. An
  // idle socket is closed well before a handler closes it (fastify's keep-alive timeout, 72 s): a request
  // written on a socket the handler is closing at that instant would be reset. The agent's timeout
  // destroys only free sockets; a request in flight merely emits 'timeout', which nothing here acts on.
  const agent = new Agent({
    keepAlive: true,
    maxSockets: 64,
    timeout: options.idleUpstreamMs ?? IDLE_UPSTREAM_MS,
  });
  let next = 0;

  const forward = async (incoming: IncomingMessage, answer: ServerResponse): Promise<void> => {
    const body = await bodyOf(incoming);
    const attempt = (tries: number): void => {
      const targets = list();
      const index = next % targets.length;
      next = (next + 1) % Math.max(1, targets.length);
      const target = new URL(targets[index] ?? '');
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
          counts[index] = (counts[index] ?? 0) + 1;
          answer.writeHead(upstream.statusCode ?? 502, upstream.headers);
          upstream.pipe(answer);
          upstream.on('error', () => answer.destroy());
        },
      );
      outgoing.on('error', (error: NodeJS.ErrnoException) => {
        if (error.code === 'ECONNREFUSED' && tries + 1 < targets.length * REFUSED_ROUNDS) {
          const pause = (tries + 1) % targets.length === 0 ? ROUND_PAUSE_MS : 0;
          setTimeout(() => attempt(tries + 1), pause);
          return;
        }
        if (answer.headersSent) {
          answer.destroy(error);
          return;
        }
        answer.writeHead(502, { 'content-type': 'text/plain', 'retry-after': '1' });
        answer.end(`balancer: upstream ${target.host}: ${error.code ?? error.message}\n`);
      });
      outgoing.end(body);
    };
    attempt(0);
  };

  const server: Server = createServer((incoming, answer) => {
    forward(incoming, answer).catch(() => answer.destroy());
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => resolve());
  });
  const address = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${address.port}`,
    forwarded: () => list().map((_, index) => counts[index] ?? 0),
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      agent.destroy();
    },
  };
}
