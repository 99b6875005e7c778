import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { Agent, request } from 'node:https';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { promisify } from 'node:util';
import { gunzip } from 'node:zlib';
import type { StateReport } from '../schemas/result.ts';
import {
  apiServerOrigin,
  forwardedHeaders,
  observesState,
  routeOf,
  type StateSecretScope,
  secretListAnswer,
  stateReportOf,
} from './backend-access.ts';

const gunzipBody = promisify(gunzip);

/**
 * The loopback proxy between the runtime's kubernetes backend and the API server (issue 16 item 3; the
 * rules are in src/runner/backend-access.ts). It listens on 127.0.0.1 only, without credentials of its
 * own to check: everything that can reach it is the runner's pod, which holds the token anyway. It
 * forwards every request to the in-cluster API server as the pod's ServiceAccount, streaming both bodies,
 * and answers the state backend's Secret list itself, from a read of the run's own state Secret. It keeps
 * what the last successful answer about the state Secret said of it (its size, its move label), so the run
 * reports the state as it left it without a request of its own.
 */

/** A running proxy. */
export interface KubeProxy {
  /** `http://127.0.0.1:<port>`, for the kubeconfig. */
  url: string;
  /** Stops listening, ends open connections; resolves once the server is closed. Idempotent. */
  close(): Promise<void>;
  /** The state Secret as the newest successful answer about it showed it; undefined before any. */
  stateSeen(): StateReport | undefined;
}

export interface KubeProxyOptions {
  /** Holds `token` and `ca.crt` (the kubelet's projected ServiceAccount volume). */
  serviceAccountDir: string;
  /** The runner's environment: `KUBERNETES_SERVICE_HOST` and `KUBERNETES_SERVICE_PORT`. */
  env: NodeJS.ProcessEnv;
  scope: StateSecretScope;
  /** A line for the runner's log (failed upstream requests; each distinct one once). */
  log: (text: string) => void;
}

/** A started proxy, or why it could not start (the message names the file or variable). */
export type KubeProxyStart = { ok: true; proxy: KubeProxy } | { ok: false; message: string };

/**
 * The token, as client-go's cached file token source reads it: trimmed, and never empty. Throws a message
 * that names the path.
 */
async function readToken(path: string): Promise<string> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (cause) {
    throw new Error(
      `service account token ${path}: ${(cause as NodeJS.ErrnoException).code ?? 'unreadable'}`,
    );
  }
  const token = text.trim();
  if (token === '') throw new Error(`service account token ${path}: empty`);
  return token;
}

/** The whole body of an answer as sent (a Secret: bounded by the API server's 1 MiB object limit). */
async function readRaw(answer: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of answer) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** The whole body of an answer as text; a gzip'd one (the runtime's client asks for it) unzipped. */
async function bodyText(raw: Buffer, headers: IncomingMessage['headers']): Promise<string> {
  const gzipped = headers['content-encoding']?.toLowerCase() === 'gzip';
  return (gzipped ? await gunzipBody(raw) : raw).toString('utf8');
}

/** A Kubernetes Status body, so the runtime shows the proxy's failure as the API server's own. */
function statusBody(code: number, message: string): string {
  return JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', message, code });
}

/**
 * Starts the proxy. Checks first what every request needs: the API server's address, the CA and the
 * token; a failure is returned (naming the path), never thrown. The CA is read once: a new one is for new
 * pods. The token is read again on every request, since the kubelet rotates it in place.
 */
export async function startKubeProxy(options: KubeProxyOptions): Promise<KubeProxyStart> {
  const origin = apiServerOrigin(options.env);
  if (!origin.ok) return { ok: false, message: origin.message };
  const caPath = join(options.serviceAccountDir, 'ca.crt');
  const tokenPath = join(options.serviceAccountDir, 'token');
  let ca: string;
  try {
    ca = await readFile(caPath, 'utf8');
  } catch (cause) {
    return {
      ok: false,
      message: `service account CA ${caPath}: ${(cause as NodeJS.ErrnoException).code ?? 'unreadable'}`,
    };
  }
  if (ca.trim() === '') return { ok: false, message: `service account CA ${caPath}: empty` };
  try {
    await readToken(tokenPath);
  } catch (cause) {
    return { ok: false, message: (cause as Error).message };
  }

  const agent = new Agent({ ca, keepAlive: true });
  let stateSeen: StateReport | undefined;
  const see = (body: string) => {
    stateSeen = stateReportOf(body, options.scope) ?? stateSeen;
  };
  const reported = new Set<string>();
  const reportOnce = (key: string, text: string) => {
    if (reported.has(key)) return;
    reported.add(key);
    options.log(text);
  };

  const forward = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const method = req.method ?? 'GET';
    const route = routeOf(method, req.url ?? '/', options.scope);
    const target = route.kind === 'list-from-get' ? route.getTarget : (req.url ?? '/');
    let token: string;
    try {
      token = await readToken(tokenPath);
    } catch (cause) {
      reportOnce('token', `kube proxy: ${(cause as Error).message}`);
      req.resume();
      res.writeHead(503, { 'content-type': 'application/json' });
      res.end(statusBody(503, `captf runner proxy: ${(cause as Error).message}`));
      return;
    }
    const upstream = request({
      agent,
      hostname: origin.hostname,
      port: origin.port,
      method,
      path: target,
      headers: { ...forwardedHeaders(req.headers), authorization: `Bearer ${token}` },
    });
    upstream.on('response', (answer) => {
      const status = answer.statusCode ?? 502;
      if (route.kind === 'list-from-get') {
        readRaw(answer)
          .then((raw) => bodyText(raw, answer.headers))
          .then((body) => {
            if (status === 200) see(body);
            const listed = secretListAnswer({ status, body }, route.labelSelector);
            if (listed.status >= 400)
              reportOnce(`list ${listed.status}`, `kube proxy: GET ${target} answered ${listed.status}`);
            res.writeHead(listed.status, { 'content-type': 'application/json' });
            res.end(listed.body);
          })
          .catch(() => res.destroy());
        return;
      }
      // 404 is how the backend learns a state or lock does not exist yet: not a failure.
      if (status >= 400 && status !== 404) {
        const path = target.split('?')[0] ?? target;
        reportOnce(`${method} ${path} ${status}`, `kube proxy: ${method} ${target} answered ${status}`);
      }
      res.writeHead(status, answer.statusMessage, forwardedHeaders(answer.headers));
      if (status >= 200 && status < 300 && observesState(method, target, options.scope)) {
        // Held whole and passed on as it came: a Secret is at most 1 MiB, and the answer is the state's.
        readRaw(answer)
          .then(async (raw) => {
            // Seen before the runtime has the answer: once it exits, the newest state is known.
            see(await bodyText(raw, answer.headers).catch(() => ''));
            res.end(raw);
          })
          .catch(() => res.destroy());
        return;
      }
      pipeline(answer, res).catch(() => res.destroy());
    });
    upstream.on('error', (cause) => {
      reportOnce(`error ${cause.message}`, `kube proxy: ${method} ${target}: ${cause.message}`);
      if (res.headersSent) {
        res.destroy();
        return;
      }
      res.writeHead(502, { 'content-type': 'application/json' });
      res.end(statusBody(502, `captf runner proxy: API server ${origin.url}: ${cause.message}`));
    });
    // The body streams through; a client that goes away ends the upstream request too.
    pipeline(req, upstream).catch(() => upstream.destroy());
  };

  const server: Server = createServer((req, res) => {
    forward(req, res).catch(() => res.destroy());
  });
  // Watches and exec (upgrades) are not proxied: the state backend uses neither.
  server.on('upgrade', (_req, socket) => socket.destroy());
  const listening = await new Promise<{ ok: true } | { ok: false; message: string }>((resolve) => {
    server.once('error', (cause) => resolve({ ok: false, message: `kube proxy: listen: ${cause.message}` }));
    server.listen({ host: '127.0.0.1', port: 0 }, () => resolve({ ok: true }));
  });
  if (!listening.ok) {
    agent.destroy();
    return listening;
  }
  const { port } = server.address() as AddressInfo;
  let closed: Promise<void> | undefined;
  const close = () => {
    closed ??= new Promise<void>((resolve) => {
      server.close(() => resolve());
      // The runtime has exited by now; keep-alive connections would hold the server (and the runner) open.
      server.closeAllConnections();
      agent.destroy();
    });
    return closed;
  };
  return { ok: true, proxy: { url: `http://127.0.0.1:${port}`, close, stateSeen: () => stateSeen } };
}
