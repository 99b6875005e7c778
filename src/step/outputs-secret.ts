import type { V1Secret } from '@kubernetes/client-node';
import { isKubeError } from '../adapters/kube/errors.ts';
import type { KubeReader } from '../adapters/kube/reader.ts';
import type { KubeWriter } from '../adapters/kube/writer.ts';
import {
  foreignOutputsSecretMessage,
  type OutputsSecretManifest,
  outputsSecretHolder,
} from '../core/outputs-secret.ts';

/** What putting the outputs Secret in place found: the object's own, or another's (the start is refused). */
export type OutputsSecretEnsured = { kind: 'ours' } | { kind: 'foreign'; message: string };

/**
 * Makes sure the object's outputs Secret (src/core/outputs-secret.ts) exists and is the object's, before
 * the runner identity that may update it: one read, and one create when it is missing (a create that finds
 * it created meanwhile reads it again). Only its owner references are looked at, never its data. Throws a
 * KubeError on an API failure.
 */
export async function ensureOutputsSecret(
  kube: { reader: KubeReader; writer: KubeWriter },
  manifest: OutputsSecretManifest,
  ownerUid: string,
): Promise<OutputsSecretEnsured> {
  const { namespace, name } = manifest.metadata;
  let secret = await kube.reader.getSecret(namespace, name);
  if (secret === undefined) {
    try {
      return outputsSecretHolder(await kube.writer.createSecret(manifest as V1Secret), ownerUid) === 'ours'
        ? { kind: 'ours' }
        : { kind: 'foreign', message: foreignOutputsSecretMessage(name) };
    } catch (error) {
      if (!isKubeError(error, 'AlreadyExists')) throw error;
      secret = await kube.reader.getSecret(namespace, name);
    }
  }
  return secret !== undefined && outputsSecretHolder(secret, ownerUid) === 'ours'
    ? { kind: 'ours' }
    : { kind: 'foreign', message: foreignOutputsSecretMessage(name) };
}
