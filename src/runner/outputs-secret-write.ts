import { reasonOf, secretPath, serviceAccountApi } from './service-account-api.ts';

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

/** Replaces the Secret's data with `data` (base64 values); one get and one update. */
export async function writeOutputsSecret(
  target: OutputsSecretTarget,
  data: Record<string, string>,
): Promise<OutputsSecretWrite> {
  const what = `Secret ${target.namespace}/${target.name}`;
  const client = await serviceAccountApi(target.serviceAccountDir, target.env);
  if (!client.ok) return { ok: false, message: `write ${what}: ${client.message}` };
  const { api } = client;
  const path = secretPath(target.namespace, target.name);
  const call = (method: 'GET' | 'PUT', body?: string) => api.call(method, path, body);
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
    api.close();
  }
}
