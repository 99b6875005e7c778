import type { RunStateEncryption, SecretKeyLocation } from '../schemas/run-config.ts';
import { type ApiAnswer, secretPath, serviceAccountApi } from './service-account-api.ts';
import { type Passphrase, passphraseProblem } from './state-encryption.ts';

/**
 * Reads the run's state encryption passphrases from the API server, as the pod's
 * ServiceAccount: the object's runner identity, whose Role grants `get` on exactly these Secrets
 * (src/core/runner-identity.ts). So a passphrase never travels in the run config or the pod spec. Each
 * failure is a message naming the Secret, its key and the API server's status, never a value.
 */

/** The passphrases of a run, or why they cannot be had. */
export type PassphrasesRead =
  | { ok: true; passphrase: Passphrase; fallback?: Passphrase | 'unencrypted' }
  | { ok: false; message: string };

/** The passphrase at `location` from a Secret's JSON, or why there is none. Pure. */
export function passphraseOf(
  location: SecretKeyLocation,
  answer: ApiAnswer,
): Passphrase | { problem: string } {
  const where = `Secret ${location.name}`;
  if (answer.status === 404) return { problem: `the state encryption ${where} does not exist` };
  if (answer.status === 403) {
    return {
      problem: `the runner may not read the state encryption ${where} (403): its runner identity's Role names it, or the account spec.jobs.serviceAccountName names must be granted get on it`,
    };
  }
  if (answer.status !== 200)
    return { problem: `reading the state encryption ${where} answered ${answer.status}` };
  let data: Record<string, string> | undefined;
  try {
    data = (JSON.parse(answer.body) as { data?: Record<string, string> }).data;
  } catch {
    return { problem: `reading the state encryption ${where}: not JSON` };
  }
  const encoded = data?.[location.key];
  if (encoded === undefined) return { problem: `the state encryption ${where} has no key ${location.key}` };
  const passphrase = { location, value: Buffer.from(encoded, 'base64').toString('utf8') };
  const problem = passphraseProblem(passphrase);
  return problem === undefined ? passphrase : { problem };
}

/**
 * Reads the passphrase and the fallback's (when it is one) of `encryption`, with the token and CA of
 * `serviceAccountDir` and the API server `env` names (KUBERNETES_SERVICE_HOST and _PORT).
 */
export async function readPassphrases(
  encryption: RunStateEncryption,
  serviceAccountDir: string,
  env: NodeJS.ProcessEnv,
): Promise<PassphrasesRead> {
  const client = await serviceAccountApi(serviceAccountDir, env);
  if (!client.ok) return { ok: false, message: `state encryption: ${client.message}` };
  const { api } = client;
  const read = async (location: SecretKeyLocation): Promise<Passphrase | { problem: string }> => {
    try {
      return passphraseOf(location, await api.call('GET', secretPath(encryption.namespace, location.name)));
    } catch (cause) {
      return { problem: `reading the state encryption Secret ${location.name}: ${(cause as Error).message}` };
    }
  };
  try {
    return await readBoth(encryption, read);
  } finally {
    api.close();
  }
}

/** The passphrase and, when it is a Secret's, the fallback's, each read with `read`. */
async function readBoth(
  encryption: RunStateEncryption,
  read: (location: SecretKeyLocation) => Promise<Passphrase | { problem: string }>,
): Promise<PassphrasesRead> {
  const passphrase = await read(encryption.passphrase);
  if ('problem' in passphrase) return { ok: false, message: passphrase.problem };
  const fallback = encryption.fallback;
  if (fallback === undefined) return { ok: true, passphrase };
  if (fallback === 'unencrypted') return { ok: true, passphrase, fallback };
  const old = await read(fallback);
  if ('problem' in old) return { ok: false, message: `fallback: ${old.problem}` };
  return { ok: true, passphrase, fallback: old };
}
