import { randomBytes } from 'node:crypto';
import { isKubeError } from '../adapters/kube/errors.ts';
import { OUR_API_VERSION } from '../adapters/kube/resources.ts';
import { LABELS } from '../core/job-labels.ts';
import { ownerReference } from '../core/job-manifest.ts';
import { buildRunConfig } from '../core/run-secret-manifest.ts';
import type { RunConfigInput } from '../schemas/run-config.ts';
import type { StepContext } from './context.ts';

/**
 * The run config of one Job (DESIGN.md section 9, src/schemas/run-config.ts), resolved from live reads:
 * `spec.variables` plus the `variablesFrom` Secret keys, the backend and its Secret, the lock timeout, the
 * expected digest of an approved plan, the stale lock id to force-unlock (section 12) and the object's plan
 * HMAC key (section 11), which lives in a Secret of its own owned by the object.
 */

/** The per-object plan HMAC key Secret (owned by the object, so it goes with it). */
export function planKeySecretName(uid: string): string {
  return `captf-plan-key-${uid}`;
}

/** The key inside the plan key Secret. */
const PLAN_KEY = 'hmac-key';
/** 32 random bytes, base64url: 43 characters, above the runner's 32-character minimum. */
const PLAN_KEY_BYTES = 32;

export type ResolvedRunConfig =
  | { kind: 'resolved'; config: RunConfigInput }
  /** A referenced Secret or key is missing; the message names it, never a value. */
  | { kind: 'missing'; message: string };

/** What the decision adds to the run config. */
export interface RunDecisions {
  expectedPlanDigest?: string;
  forceUnlockId?: string;
}

/** A `variablesFrom` value: JSON when it parses (non-string variables), the raw text otherwise. */
function variableValue(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/**
 * Reads (or creates, once) the object's plan HMAC key. Two steps creating it at once both end up with the
 * one that won the create.
 */
async function planHmacKey(context: StepContext): Promise<string> {
  const { reader, writer } = context.deps.kube;
  const { snap } = context;
  const name = planKeySecretName(snap.uid);
  const existing = await reader.getSecret(snap.ref.namespace, name);
  const stored = existing?.data?.[PLAN_KEY];
  if (stored !== undefined) return Buffer.from(stored, 'base64').toString('utf8');
  const key = randomBytes(PLAN_KEY_BYTES).toString('base64url');
  try {
    await writer.createSecret({
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'Opaque',
      metadata: {
        name,
        namespace: snap.ref.namespace,
        // Not `captf.io/managed`: the sweep deletes managed Secrets whose Job is gone, and this one has none.
        labels: {
          [LABELS.ownerKind]: snap.ref.kind,
          [LABELS.ownerName]: snap.ref.name,
          [LABELS.ownerUid]: snap.uid,
        },
        ownerReferences: [
          ownerReference({
            apiVersion: OUR_API_VERSION,
            kind: snap.ref.kind,
            name: snap.ref.name,
            uid: snap.uid,
          }),
        ],
      },
      stringData: { [PLAN_KEY]: key },
    });
    return key;
  } catch (error) {
    if (!isKubeError(error, 'AlreadyExists')) throw error;
    const raced = await reader.getSecret(snap.ref.namespace, name);
    const value = raced?.data?.[PLAN_KEY];
    if (value === undefined) throw new Error(`read Secret ${snap.ref.namespace}/${name}: no ${PLAN_KEY} key`);
    return Buffer.from(value, 'base64').toString('utf8');
  }
}

/** Resolves the run config of the next Job; `missing` when a referenced Secret or key does not exist. */
export async function resolveRunConfig(
  context: StepContext,
  decisions: RunDecisions,
): Promise<ResolvedRunConfig> {
  const { snap, policy } = context;
  const spec = snap.spec;
  if (!spec) return { kind: 'missing', message: 'the spec does not parse' };
  const secretVariables: Record<string, unknown> = {};
  for (const from of spec.variablesFrom ?? []) {
    const { name, key } = from.secretKeyRef;
    const data = snap.referencedSecrets.get(name);
    if (data === undefined)
      return { kind: 'missing', message: `Secret ${name} (variable ${from.name}) does not exist` };
    const value = data[key];
    if (value === undefined)
      return { kind: 'missing', message: `Secret ${name} has no key ${key} (variable ${from.name})` };
    secretVariables[from.name] = variableValue(value);
  }
  let backendSecretData: Record<string, string> = {};
  if (spec.backend?.secretRef) {
    const data = snap.referencedSecrets.get(spec.backend.secretRef.name);
    if (data === undefined)
      return { kind: 'missing', message: `backend Secret ${spec.backend.secretRef.name} does not exist` };
    backendSecretData = { ...data };
  }
  return {
    kind: 'resolved',
    config: buildRunConfig({
      namespace: snap.ref.namespace,
      uid: snap.uid,
      variables: spec.variables ?? {},
      secretVariables,
      backend: spec.backend,
      backendSecretData,
      lockTimeoutSeconds: policy.lockTimeoutSeconds,
      applyPolicy: spec.applyPolicy,
      ...(decisions.expectedPlanDigest ? { expectedPlanDigest: decisions.expectedPlanDigest } : {}),
      ...(decisions.forceUnlockId ? { forceUnlockId: decisions.forceUnlockId } : {}),
      planHmacKey: await planHmacKey(context),
    }),
  };
}
