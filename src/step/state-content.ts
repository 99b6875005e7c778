import { gunzipSync } from 'node:zlib';
import type { V1Secret } from '@kubernetes/client-node';
import type { KubeReader } from '../adapters/kube/reader.ts';
import type { StateContent } from '../core/state-evidence.ts';

/**
 * What an object's state Secret holds (issue 23 item 5), read the way OpenTofu's kubernetes backend writes it
 * (internal/backend/remote-state/kubernetes/client.go): the state JSON, gzip-compressed, under the key
 * `tfstate`; a Secret without that key is no state (the empty Secret the runner identity creates,
 * src/core/runner-identity.ts).
 */

/** Most bytes a state may inflate to: the Secret holds at most 1 MiB compressed; a bomb stops here. */
const MAX_STATE_BYTES = 64 * 1024 * 1024;

const GZIP_MAGIC = [0x1f, 0x8b];

interface StateResource {
  mode?: unknown;
  instances?: unknown;
}

/** Whether a state resource is infrastructure: managed (not a data source) with at least one instance. */
function isManaged(resource: StateResource): boolean {
  if (resource.mode === 'data') return false;
  return !Array.isArray(resource.instances) || resource.instances.length > 0;
}

/**
 * Whether a parsed state is OpenTofu's encrypted envelope (issue 25 item 3): `encrypted_data` (the
 * ciphertext, base64) beside `meta` (each key provider's public parameters) and `encryption_version`, and
 * no `resources`; the controller has no passphrase to open it.
 */
function isEncryptedState(state: Record<string, unknown>): boolean {
  return typeof state.encrypted_data === 'string' && state.resources === undefined;
}

/**
 * The content of one state Secret's data. Anything that cannot be read is `unreadable`, which every caller
 * treats as a state that exists: proof of no state must be positive. An encrypted state is `encrypted`: a
 * state OpenTofu wrote (never a lost one), whose resources are unknown.
 */
export function stateContentOf(secret: V1Secret | undefined): StateContent {
  if (secret === undefined) return 'missing';
  const encoded = secret.data?.tfstate;
  if (encoded === undefined || encoded === '') return 'unwritten';
  try {
    const raw = Buffer.from(encoded, 'base64');
    const compressed = raw[0] === GZIP_MAGIC[0] && raw[1] === GZIP_MAGIC[1];
    const text = (compressed ? gunzipSync(raw, { maxOutputLength: MAX_STATE_BYTES }) : raw).toString('utf8');
    const state: unknown = JSON.parse(text);
    if (typeof state !== 'object' || state === null || Array.isArray(state)) return 'unreadable';
    if (isEncryptedState(state as Record<string, unknown>)) return 'encrypted';
    const { resources } = state as { resources?: unknown };
    if (resources === undefined) return 'no-resources';
    if (!Array.isArray(resources)) return 'unreadable';
    return resources.some((r) => typeof r === 'object' && r !== null && isManaged(r as StateResource))
      ? 'resources'
      : 'no-resources';
  } catch {
    return 'unreadable';
  }
}

/** Reads the state Secret and tells what it holds. Throws a KubeError on an API failure. */
export async function readStateContent(
  reader: KubeReader,
  where: { namespace: string; name: string },
): Promise<StateContent> {
  return stateContentOf(await reader.getSecret(where.namespace, where.name));
}
