import { closeSync, existsSync, openSync, readFileSync, readSync, statSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createServer, type Server } from 'node:https';
import type { TLSSocket } from 'node:tls';
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { type LogOptions, logTarget, parseLogQuery, tailOffset } from './container-logs.ts';

/**
 * The local node's kubelet API, the part the API server uses for `kubectl logs`: HTTPS on loopback,
 * `GET /containerLogs/{namespace}/{pod}/{container}` (pkg/kubelet/server/server.go). Only a client
 * certificate signed by the client CA with the API server's kubelet-client common name gets in: the
 * real kubelet authorises that user through a SubjectAccessReview, which comes to the same here.
 */

/** A pod the node runs, as the log endpoint needs it. */
export interface KubeletPod {
  pod: V1Pod;
  /** The status the node reports for it now (the kubelet decides from its own status, not the API's). */
  status: V1PodStatus | undefined;
  /** The host file holding `container`'s output. */
  logPath(container: string): string;
}

/** Options of {@link startKubeletServer}. */
export interface KubeletServerOptions {
  /** PEM serving certificate and key, and the CA whose client certificates are accepted. */
  tls: { cert: string; key: string; clientCa: string };
  /** Common name the client certificate must carry (the API server's kubelet client). */
  clientCommonName: string;
  /** Looks up a pod bound to this node; undefined when the node does not run it. */
  findPod(namespace: string, name: string): KubeletPod | undefined;
  /** How often a followed log is read again, ms (the kubelet reacts to file events; 250 ms is close). */
  followPollMs?: number;
  log: (line: string) => void;
}

/** A listening kubelet API. */
export interface KubeletServer {
  port: number;
  close(): Promise<void>;
}

const containerLogsPath = /^\/containerLogs\/([^/]+)\/([^/]+)\/([^/]+)$/;

/** Starts the kubelet API on 127.0.0.1 on a free port. Rejects when it cannot listen. */
export async function startKubeletServer(options: KubeletServerOptions): Promise<KubeletServer> {
  const following = new Set<() => void>();
  const server: Server = createServer(
    {
      cert: options.tls.cert,
      key: options.tls.key,
      ca: options.tls.clientCa,
      requestCert: true,
      rejectUnauthorized: true,
    },
    (req, res) => {
      serve(req, res, options, following).catch((cause: Error) => {
        options.log(`kubelet API ${req.url}: ${cause.message}`);
        if (!res.headersSent) reply(res, 500, cause.message);
        else res.destroy();
      });
    },
  );
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    port,
    close: async () => {
      // A followed log would hold the server open until its container ends; a stopping node ends it.
      for (const end of following) end();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The kubelet writes its refusals as plain text, the API server relays them as the Status message. */
function reply(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8' });
  res.end(message);
}

async function serve(
  req: IncomingMessage,
  res: ServerResponse,
  options: KubeletServerOptions,
  following: Set<() => void>,
): Promise<void> {
  const peer = (req.socket as TLSSocket).getPeerCertificate();
  if (peer.subject?.CN !== options.clientCommonName) {
    reply(
      res,
      403,
      `Forbidden (user=${peer.subject?.CN ?? 'unknown'}, verb=get, resource=nodes, subresource=proxy)`,
    );
    return;
  }
  const url = new URL(req.url ?? '/', 'https://127.0.0.1');
  const match = containerLogsPath.exec(url.pathname);
  if (req.method !== 'GET' || !match) {
    reply(res, 404, '404 page not found');
    return;
  }
  const [namespace, podName, container] = match.slice(1).map(decodeURIComponent) as [string, string, string];
  const query = parseLogQuery(url.searchParams);
  if (query.kind === 'refused') {
    reply(res, query.status, query.message);
    return;
  }
  const found = options.findPod(namespace, podName);
  if (!found) {
    reply(res, 404, `pod "${podName}" does not exist`);
    return;
  }
  const spec = found.pod.spec;
  const inSpec = [...(spec?.initContainers ?? []), ...(spec?.containers ?? [])].some(
    (c) => c.name === container,
  );
  if (!inSpec) {
    reply(res, 404, `container "${container}" not found in pod "${podName}"`);
    return;
  }
  const target = logTarget(podName, found.status, container, query.options.previous);
  if (target.kind === 'unavailable') {
    reply(res, 400, target.message);
    return;
  }
  res.writeHead(200, { 'content-type': 'text/plain' });
  const path = found.logPath(container);
  const stillRunning = (): boolean => {
    const now = options.findPod(namespace, podName);
    const state = logTarget(podName, now?.status, container, false);
    return state.kind === 'current' && state.running;
  };
  await streamLog(res, path, query.options, target.running && query.options.follow, stillRunning, {
    pollMs: options.followPollMs ?? 250,
    following,
  });
}

/**
 * Writes the log at `path` (tail and limit applied), then, when `follow`, what the container appends
 * until `stillRunning()` turns false (one last read catches its final output) or the client goes away.
 */
async function streamLog(
  res: ServerResponse,
  path: string,
  options: LogOptions,
  follow: boolean,
  stillRunning: () => boolean,
  loop: { pollMs: number; following: Set<() => void> },
): Promise<void> {
  let remaining = options.limitBytes ?? Number.POSITIVE_INFINITY;
  const write = (chunk: Buffer): void => {
    const part = chunk.length > remaining ? chunk.subarray(0, remaining) : chunk;
    remaining -= part.length;
    if (part.length > 0) res.write(part);
  };
  const initial = existsSync(path) ? readFileSync(path) : Buffer.alloc(0);
  let offset = initial.length;
  write(initial.subarray(options.tailLines === undefined ? 0 : tailOffset(initial, options.tailLines)));
  if (follow) {
    let ended = false;
    const end = (): void => {
      ended = true;
    };
    loop.following.add(end);
    res.once('close', end);
    try {
      while (!ended && remaining > 0) {
        const running = stillRunning();
        offset = readNew(path, offset, write);
        if (!running) break;
        await new Promise((resolve) => setTimeout(resolve, loop.pollMs));
      }
    } finally {
      loop.following.delete(end);
    }
  }
  res.end();
}

/** Passes the bytes appended to `path` since `offset` to `write`; returns the new offset. */
function readNew(path: string, offset: number, write: (chunk: Buffer) => void): number {
  if (!existsSync(path)) return offset;
  const size = statSync(path).size;
  if (size <= offset) return offset;
  const chunk = Buffer.alloc(size - offset);
  const fd = openSync(path, 'r');
  try {
    const read = readSync(fd, chunk, 0, chunk.length, offset);
    write(chunk.subarray(0, read));
    return offset + read;
  } finally {
    closeSync(fd);
  }
}
