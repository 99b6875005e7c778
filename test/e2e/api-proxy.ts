import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { Agent, request as httpsRequest } from 'node:https';
import type { Socket } from 'node:net';
import { join } from 'node:path';

/**
 * A fault-injecting HTTP proxy on loopback between the handlers (and the relay) and the real API server
 * (issue 13 item 2, scenario 3). It forwards plain HTTP to the HTTPS API server with the stack's CA and
 * admin token, and while faults are set answers some requests itself: 503 before forwarding (nothing
 * happened), 500 after forwarding (the write landed but its answer is lost), 429 with Retry-After, or no
 * answer at all after forwarding (the client's request timeout fires; the write may have landed). Watch
 * connections are forwarded as streams and can be cut all at once.
 */

/** Chances, each in [0, 1], that one request meets a fault; all 0 forwards everything. */
export interface ApiFaults {
  /** Answered 503 without reaching the API server. */
  unavailable: number;
  /** Forwarded, its answer replaced by a 500: the change may have been made. */
  lostAnswer: number;
  /** Answered 429 with `Retry-After: 1` without reaching the API server. */
  throttled: number;
  /** Forwarded, never answered: held until the client gives up (its request timeout). */
  hang: number;
}

/** Counts of what the proxy did, by kind. */
export type ProxyCounts = Record<'forwarded' | keyof ApiFaults | 'watchesCut', number>;

/** A running proxy. */
export interface ApiProxy {
  url: string;
  /** A kubeconfig naming the proxy: the handlers' and relay's KUBECONFIG. */
  kubeconfigPath: string;
  /** Sets the faults from now on (unnamed kinds keep their chance). */
  setFaults(faults: Partial<ApiFaults>): void;
  counts: ProxyCounts;
  /** Cuts every watch connection in flight; answers how many. */
  cutWatches(): number;
  close(): Promise<void>;
}

/** No faults: a transparent proxy. */
export const NO_API_FAULTS: ApiFaults = { unavailable: 0, lostAnswer: 0, throttled: 0, hang: 0 };

/** How long a hung request is held before its socket is closed: past the client's 10 s request timeout. */
const HANG_MS = 15_000;

function isWatch(req: IncomingMessage): boolean {
  return /[?&]watch=(true|1)(&|$)/.test(req.url ?? '');
}

/** Starts the proxy to `apiServerUrl`; its kubeconfig goes to `<dir>/proxy-kubeconfig`. */
export async function startApiProxy(options: {
  apiServerUrl: string;
  caPath: string;
  token: string;
  dir: string;
}): Promise<ApiProxy> {
  const upstream = new URL(options.apiServerUrl);
  const agent = new Agent({ ca: readFileSync(options.caPath), keepAlive: true, maxSockets: 64 });
  const faults: ApiFaults = { ...NO_API_FAULTS };
  const counts: ProxyCounts = {
    forwarded: 0,
    unavailable: 0,
    lostAnswer: 0,
    throttled: 0,
    hang: 0,
    watchesCut: 0,
  };
  const watches = new Set<ServerResponse>();
  const held = new Set<Socket>();

  const forward = (
    req: IncomingMessage,
    res: ServerResponse,
    body: Buffer,
    answer: 'pass' | 'lose' | 'hang',
  ): void => {
    const headers = { ...req.headers, host: upstream.host, authorization: `Bearer ${options.token}` };
    const out = httpsRequest(
      {
        host: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: req.url,
        headers,
        agent,
      },
      (upstreamRes) => {
        if (answer !== 'pass') {
          // The API server did what it was asked; the caller never learns it.
          upstreamRes.resume();
          if (answer === 'lose') {
            res.writeHead(500, { 'content-type': 'application/json' });
            res.end(
              JSON.stringify({
                kind: 'Status',
                apiVersion: 'v1',
                status: 'Failure',
                message: 'fault proxy: answer lost',
                reason: 'InternalError',
                code: 500,
              }),
            );
          }
          return;
        }
        res.writeHead(upstreamRes.statusCode ?? 502, upstreamRes.headers);
        if (isWatch(req)) {
          watches.add(res);
          res.on('close', () => {
            watches.delete(res);
            upstreamRes.destroy();
          });
        }
        upstreamRes.pipe(res);
        upstreamRes.on('error', () => res.destroy());
      },
    );
    out.on('error', () => {
      if (!res.headersSent) res.writeHead(502);
      res.end();
    });
    // A caller that gave up (or a cut watch) ends the upstream request too.
    res.on('close', () => out.destroy());
    out.end(body);
  };

  const refuse = (res: ServerResponse, code: 503 | 429): void => {
    res.writeHead(code, { 'content-type': 'application/json', 'retry-after': '1' });
    res.end(
      JSON.stringify({
        kind: 'Status',
        apiVersion: 'v1',
        status: 'Failure',
        message: `fault proxy: ${code === 429 ? 'too many requests' : 'unavailable'}`,
        reason: code === 429 ? 'TooManyRequests' : 'ServiceUnavailable',
        code,
      }),
    );
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const draw = Math.random();
      let edge = faults.unavailable;
      if (draw < edge) {
        counts.unavailable += 1;
        refuse(res, 503);
        return;
      }
      edge += faults.throttled;
      if (draw < edge) {
        counts.throttled += 1;
        refuse(res, 429);
        return;
      }
      edge += faults.lostAnswer;
      if (draw < edge && !isWatch(req)) {
        counts.lostAnswer += 1;
        forward(req, res, body, 'lose');
        return;
      }
      edge += faults.hang;
      if (draw < edge && !isWatch(req)) {
        counts.hang += 1;
        const socket = req.socket;
        held.add(socket);
        forward(req, res, body, 'hang');
        setTimeout(() => {
          held.delete(socket);
          socket.destroy();
        }, HANG_MS).unref();
        return;
      }
      counts.forwarded += 1;
      forward(req, res, body, 'pass');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const url = `http://127.0.0.1:${port}`;
  const kubeconfigPath = join(options.dir, 'proxy-kubeconfig');
  writeFileSync(
    kubeconfigPath,
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      '- name: proxy',
      '  cluster:',
      `    server: ${url}`,
      // client-node refuses a plain-HTTP server unless told to skip TLS verification: there is no TLS
      // to verify on loopback; the proxy's own leg to the API server verifies the stack's CA.
      '    insecure-skip-tls-verify: true',
      'users:',
      '- name: proxy',
      '  user:',
      // The proxy adds the real credentials; the handlers hold none of their own here.
      '    token: via-fault-proxy',
      'contexts:',
      '- name: proxy',
      '  context:',
      '    cluster: proxy',
      '    user: proxy',
      'current-context: proxy',
      '',
    ].join('\n'),
    { mode: 0o600 },
  );
  return {
    url,
    kubeconfigPath,
    setFaults(next) {
      Object.assign(faults, next);
    },
    counts,
    cutWatches() {
      const cut = watches.size;
      for (const res of watches) res.destroy();
      watches.clear();
      counts.watchesCut += cut;
      return cut;
    },
    close: async () => {
      for (const socket of held) socket.destroy();
      for (const res of watches) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      agent.destroy();
    },
  };
}
