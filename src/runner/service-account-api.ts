import { readFile } from 'node:fs/promises';
import { Agent, request } from 'node:https';
import { join } from 'node:path';
import { apiServerOrigin } from './backend-access.ts';

/**
 * Plain HTTPS requests to the API server as the pod's ServiceAccount (its `token` and `ca.crt`), for the
 * runner's own reads and writes (the state encryption passphrases, the outputs Secret, the run log). A few requests per run need no client library.
 */

/** How long one request may take, ms. */
const REQUEST_TIMEOUT_MS = 30_000;

/** An answer: the status code and the body as text. */
export interface ApiAnswer {
  status: number;
  body: string;
}

/** A client for one run's writes; `close` ends its connections. */
export interface ServiceAccountApi {
  call(method: 'GET' | 'PUT' | 'POST' | 'DELETE', path: string, body?: string): Promise<ApiAnswer>;
  close(): void;
}

/** The client, or why there is none (no API server address, no token or CA); the message names no value. */
export async function serviceAccountApi(
  serviceAccountDir: string,
  env: NodeJS.ProcessEnv,
): Promise<{ ok: true; api: ServiceAccountApi } | { ok: false; message: string }> {
  const origin = apiServerOrigin(env);
  if (!origin.ok) return origin;
  let ca: string;
  let token: string;
  try {
    ca = await readFile(join(serviceAccountDir, 'ca.crt'), 'utf8');
    token = (await readFile(join(serviceAccountDir, 'token'), 'utf8')).trim();
  } catch (cause) {
    const code = (cause as NodeJS.ErrnoException).code ?? 'unreadable';
    return { ok: false, message: `service account in ${serviceAccountDir}: ${code}` };
  }
  const agent = new Agent({ ca });
  const call = (method: string, path: string, body?: string) =>
    new Promise<ApiAnswer>((resolve, reject) => {
      const req = request({
        agent,
        hostname: origin.hostname,
        port: origin.port,
        method,
        path,
        headers: {
          authorization: `Bearer ${token}`,
          accept: 'application/json',
          ...(body === undefined
            ? {}
            : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }),
        },
      });
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }),
        );
        res.on('error', reject);
      });
      // A hung API server must not hold the run: its pod would stay until the Job's deadline.
      req.setTimeout(REQUEST_TIMEOUT_MS, () =>
        req.destroy(new Error(`timed out after ${REQUEST_TIMEOUT_MS / 1000} s`)),
      );
      req.on('error', reject);
      req.end(body);
    });
  return { ok: true, api: { call, close: () => agent.destroy() } };
}

/** The `reason` of a Kubernetes Status body (`Forbidden`, `NotFound`…), never its message. */
export function reasonOf(body: string): string {
  try {
    const reason = (JSON.parse(body) as { reason?: unknown }).reason;
    return typeof reason === 'string' ? ` ${reason}` : '';
  } catch {
    return '';
  }
}

/** The API path of a Secret, or of a namespace's Secrets when `name` is absent. */
export function secretPath(namespace: string, name?: string): string {
  const base = `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets`;
  return name === undefined ? base : `${base}/${encodeURIComponent(name)}`;
}
