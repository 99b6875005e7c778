import { readFile } from 'node:fs/promises';
import { Agent, request } from 'node:https';
import { join } from 'node:path';
import { apiServerOrigin } from './backend-access.ts';

/**
 * Writes the outputs Secret (issue 24 item 3) as the pod's ServiceAccount: a `get` of the Secret the
 * controller created, then, unless it holds these outputs already, an `update` that replaces its `data` and
 * keeps everything else (its owner
 * reference, its labels, its resourceVersion, so a concurrent change is a conflict, never lost). The runner
 * identity's Role allows exactly these two verbs on exactly this name (src/core/runner-identity.ts).
 * Messages name the Secret and the API server's status code, never a value.
 */

/** Where the Secret is and how to reach the API server. */
export interface OutputsSecretTarget {
  namespace: string;
  name: string;
  /** Holds the pod's ServiceAccount `token` and `ca.crt`. */
  serviceAccountDir: string;
  /** `KUBERNETES_SERVICE_HOST` and `KUBERNETES_SERVICE_PORT`. */
  env: NodeJS.ProcessEnv;
}

/** How the write went: the bytes of the update sent, 0 when the Secret held these outputs already. */
export type OutputsSecretWrite = { ok: true; bytes: number } | { ok: false; message: string };

/** Whether two Secret `data` maps hold the same keys and values. */
function sameData(a: Record<string, string> | undefined, b: Record<string, string>): boolean {
  const keys = Object.keys(b);
  return a !== undefined && Object.keys(a).length === keys.length && keys.every((key) => a[key] === b[key]);
}

interface Answer {
  status: number;
  body: string;
}

/** The `reason` of a Kubernetes Status body (`Forbidden`, `NotFound`…), never its message. */
function reasonOf(body: string): string {
  try {
    const reason = (JSON.parse(body) as { reason?: unknown }).reason;
    return typeof reason === 'string' ? ` ${reason}` : '';
  } catch {
    return '';
  }
}

/** Replaces the Secret's data with `data` (base64 values); one get and one update. */
export async function writeOutputsSecret(
  target: OutputsSecretTarget,
  data: Record<string, string>,
): Promise<OutputsSecretWrite> {
  const what = `Secret ${target.namespace}/${target.name}`;
  const origin = apiServerOrigin(target.env);
  if (!origin.ok) return { ok: false, message: `write ${what}: ${origin.message}` };
  let ca: string;
  let token: string;
  try {
    ca = await readFile(join(target.serviceAccountDir, 'ca.crt'), 'utf8');
    token = (await readFile(join(target.serviceAccountDir, 'token'), 'utf8')).trim();
  } catch (cause) {
    const code = (cause as NodeJS.ErrnoException).code ?? 'unreadable';
    return { ok: false, message: `write ${what}: service account in ${target.serviceAccountDir}: ${code}` };
  }
  const agent = new Agent({ ca });
  const path = `/api/v1/namespaces/${encodeURIComponent(target.namespace)}/secrets/${encodeURIComponent(target.name)}`;
  const call = (method: 'GET' | 'PUT', body?: string) =>
    new Promise<Answer>((resolve, reject) => {
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
      req.on('error', reject);
      req.end(body);
    });
  try {
    const read = await call('GET');
    if (read.status !== 200)
      return { ok: false, message: `get ${what}: ${read.status}${reasonOf(read.body)}` };
    const secret = JSON.parse(read.body) as Record<string, unknown>;
    // Unchanged outputs (a refresh that found nothing new) cost no write: no etcd revision, no watch event.
    if (sameData(secret.data as Record<string, string> | undefined, data)) return { ok: true, bytes: 0 };
    const { stringData: _ignored, ...rest } = secret;
    const body = JSON.stringify({ ...rest, data });
    const written = await call('PUT', body);
    if (written.status !== 200)
      return { ok: false, message: `update ${what}: ${written.status}${reasonOf(written.body)}` };
    return { ok: true, bytes: Buffer.byteLength(body) };
  } catch (cause) {
    return { ok: false, message: `write ${what}: ${(cause as Error).message}` };
  } finally {
    agent.destroy();
  }
}
