import type { RunLogSecretManifest } from '../core/run-log.ts';
import { reasonOf, secretPath, serviceAccountApi } from './service-account-api.ts';

/**
 * Creates the run log Secret (src/core/run-log.ts) as the pod's ServiceAccount: one `create`. A Secret of
 * that name left by an earlier Job of the same name (deleted by hand before it was bookkept, then made
 * again) is deleted and the create repeated; admission lets a runner identity create and delete only its
 * own Job's log (infra/admission/runner-secret-writes-policy.yaml). Messages name the Secret and the API
 * server's status code, never the log.
 */

/** How the write went: the bytes of the create sent. */
export type RunLogWrite = { ok: true; bytes: number } | { ok: false; message: string };

/** Writes `secret`; at most three requests (create, and after AlreadyExists a delete and a create). */
export async function writeRunLog(
  secret: RunLogSecretManifest,
  serviceAccountDir: string,
  env: NodeJS.ProcessEnv,
): Promise<RunLogWrite> {
  const { namespace, name } = secret.metadata;
  const what = `Secret ${namespace}/${name}`;
  const client = await serviceAccountApi(serviceAccountDir, env);
  if (!client.ok) return { ok: false, message: `write ${what}: ${client.message}` };
  const { api } = client;
  const body = JSON.stringify(secret);
  try {
    let created = await api.call('POST', secretPath(namespace), body);
    if (created.status === 409) {
      const deleted = await api.call('DELETE', secretPath(namespace, name));
      if (deleted.status !== 200 && deleted.status !== 404)
        return { ok: false, message: `delete ${what}: ${deleted.status}${reasonOf(deleted.body)}` };
      created = await api.call('POST', secretPath(namespace), body);
    }
    if (created.status !== 201)
      return { ok: false, message: `create ${what}: ${created.status}${reasonOf(created.body)}` };
    return { ok: true, bytes: Buffer.byteLength(body) };
  } catch (cause) {
    return { ok: false, message: `write ${what}: ${(cause as Error).message}` };
  } finally {
    api.close();
  }
}
