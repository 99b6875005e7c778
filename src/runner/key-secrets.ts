import { readFile } from 'node:fs/promises';
import { request } from 'node:https';
import { join } from 'node:path';
import type { RunStateEncryption, SecretKeyLocation } from '../schemas/run-config.ts';
import { apiServerOrigin } from './backend-access.ts';
import { type Passphrase, passphraseProblem } from './state-encryption.ts';

/**
 * Reads the run's state encryption passphrases (issue 25 item 3) from the API server, as the pod's
 * ServiceAccount: the object's runner identity, whose Role grants `get` on exactly these Secrets
 * (src/core/runner-identity.ts). So a passphrase never travels in the run config or the pod spec. Each
 * failure is a message naming the Secret, its key and the API server's status, never a value.
 */

/** The passphrases of a run, or why they cannot be had. */
export type PassphrasesRead =
  | { ok: true; passphrase: Passphrase; fallback?: Passphrase | 'unencrypted' }
  | { ok: false; message: string };

/** One GET's answer: status and body (a Secret: bounded by the API server's 1 MiB object limit). */
async function get(
  url: { hostname: string; port: number },
  path: string,
  ca: string,
  token: string,
): Promise<{ status: number; body: string }> {
  return await new Promise((resolve, reject) => {
    const req = request(
      {
        hostname: url.hostname,
        port: url.port,
        path,
        method: 'GET',
        ca,
        headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
        timeout: 30_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }),
        );
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error('timed out after 30 s')));
    req.on('error', reject);
    req.end();
  });
}

/** The passphrase at `location` from a Secret's JSON, or why there is none. Pure. */
export function passphraseOf(
  location: SecretKeyLocation,
  answer: { status: number; body: string },
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
  const origin = apiServerOrigin(env);
  if (!origin.ok) return { ok: false, message: `state encryption: ${origin.message}` };
  let ca: string;
  let token: string;
  try {
    ca = await readFile(join(serviceAccountDir, 'ca.crt'), 'utf8');
    token = (await readFile(join(serviceAccountDir, 'token'), 'utf8')).trim();
  } catch (cause) {
    const code = (cause as NodeJS.ErrnoException).code ?? 'unreadable';
    return { ok: false, message: `state encryption: service account ${serviceAccountDir}: ${code}` };
  }
  const read = async (location: SecretKeyLocation): Promise<Passphrase | { problem: string }> => {
    const path = `/api/v1/namespaces/${encodeURIComponent(encryption.namespace)}/secrets/${encodeURIComponent(location.name)}`;
    try {
      return passphraseOf(location, await get(origin, path, ca, token));
    } catch (cause) {
      return { problem: `reading the state encryption Secret ${location.name}: ${(cause as Error).message}` };
    }
  };
  const passphrase = await read(encryption.passphrase);
  if ('problem' in passphrase) return { ok: false, message: passphrase.problem };
  const fallback = encryption.fallback;
  if (fallback === undefined) return { ok: true, passphrase };
  if (fallback === 'unencrypted') return { ok: true, passphrase, fallback };
  const old = await read(fallback);
  if ('problem' in old) return { ok: false, message: `fallback: ${old.problem}` };
  return { ok: true, passphrase, fallback: old };
}
