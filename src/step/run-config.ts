import { randomBytes } from 'node:crypto';
import type { V1Secret } from '@kubernetes/client-node';
import { isKubeError } from '../adapters/kube/errors.ts';
import type { KubeReader } from '../adapters/kube/reader.ts';
import type { KubeWriter } from '../adapters/kube/writer.ts';
import { LABELS } from '../core/job-labels.ts';
import { ownerReference } from '../core/job-manifest.ts';
import type { ObjectRef } from '../core/object-ref.ts';
import { buildRunConfig, type RunConfigSource } from '../core/run-secret-manifest.ts';
import { OUR_API_VERSION } from '../schemas/kinds/registry.ts';
import type { RunConfigInput } from '../schemas/run-config.ts';

/**
 * The run config of one Job (DESIGN.md section 9, src/schemas/run-config.ts): the inputs the planner
 * resolved (src/core/run-inputs.ts) plus the object's plan HMAC key (section 11), which lives in a Secret of
 * its own owned by the object, read here (and created once).
 */

/**
 * The per-object plan HMAC key Secret, named by the object's state suffix (src/core/state-identity.ts) like
 * its state; owned by the object, so it goes with it.
 */
export function planKeySecretName(stateSuffix: string): string {
  return `captf-plan-key-${stateSuffix}`;
}

/** The key inside the plan key Secret. */
const PLAN_KEY = 'hmac-key';
/** 32 random bytes, base64url: 43 characters, above the runner's 32-character minimum. */
const PLAN_KEY_BYTES = 32;

/** The object a plan key belongs to. */
export interface KeyOwner {
  ref: ObjectRef;
  uid: string;
}

/** The plan key Secret of `owner`, holding `key`. */
function planKeySecret(owner: KeyOwner, name: string, key: string): V1Secret {
  const { ref, uid } = owner;
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'Opaque',
    metadata: {
      name,
      namespace: ref.namespace,
      // Not `captf.io/managed`: that label marks a Job's things, and this Secret is the object's own.
      labels: { [LABELS.ownerKind]: ref.kind, [LABELS.ownerName]: ref.name, [LABELS.ownerUid]: uid },
      ownerReferences: [ownerReference({ apiVersion: OUR_API_VERSION, kind: ref.kind, name: ref.name, uid })],
    },
    stringData: { [PLAN_KEY]: key },
  };
}

/** A fresh key: {@link PLAN_KEY_BYTES} random bytes, base64url. */
function newPlanKey(): string {
  return randomBytes(PLAN_KEY_BYTES).toString('base64url');
}

/**
 * Reads (or creates, once) the object's plan HMAC key. Two steps creating it at once both end up with the
 * one that won the create.
 */
async function planHmacKey(
  kube: { reader: KubeReader; writer: KubeWriter },
  owner: KeyOwner,
  stateSuffix: string,
): Promise<string> {
  const { reader, writer } = kube;
  const { ref } = owner;
  const name = planKeySecretName(stateSuffix);
  const existing = await reader.getSecret(ref.namespace, name);
  const stored = existing?.data?.[PLAN_KEY];
  if (stored !== undefined) return Buffer.from(stored, 'base64').toString('utf8');
  const key = newPlanKey();
  try {
    await writer.createSecret(planKeySecret(owner, name, key));
    return key;
  } catch (error) {
    if (!isKubeError(error, 'AlreadyExists')) throw error;
    const raced = await reader.getSecret(ref.namespace, name);
    const value = raced?.data?.[PLAN_KEY];
    if (value === undefined) throw new Error(`read Secret ${ref.namespace}/${name}: no ${PLAN_KEY} key`);
    return Buffer.from(value, 'base64').toString('utf8');
  }
}

/**
 * Creates the object's plan HMAC key ahead of its first Job (src/core/runner-setup.ts): one create, no read;
 * a key already there is kept (AlreadyExists), as the key a plan was signed with must not change. Throws a
 * KubeError for anything else.
 */
export async function createPlanKey(writer: KubeWriter, owner: KeyOwner, stateSuffix: string): Promise<void> {
  try {
    await writer.createSecret(planKeySecret(owner, planKeySecretName(stateSuffix), newPlanKey()));
  } catch (error) {
    if (!isKubeError(error, 'AlreadyExists')) throw error;
  }
}

/** The run config of a Job from its resolved inputs; reads (or creates) the plan key. */
export async function runConfigOf(
  kube: { reader: KubeReader; writer: KubeWriter },
  owner: KeyOwner,
  inputs: Omit<RunConfigSource, 'planHmacKey'>,
): Promise<RunConfigInput> {
  return buildRunConfig({ ...inputs, planHmacKey: await planHmacKey(kube, owner, inputs.stateSuffix) });
}
