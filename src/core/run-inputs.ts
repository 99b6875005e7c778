import type { EffectiveJobsPolicy } from '../schemas/kinds/jobs-policy.ts';
import type { StateEncryption } from '../schemas/kinds/state-encryption.ts';
import type { TargetSpec } from '../schemas/kinds/target.ts';
import type { Op } from '../schemas/result.ts';
import { type BootstrapData, drivenByClusterApi } from './cluster-api.ts';
import { moduleInputsOf } from './module-inputs.ts';
import { createRedactor, type Redactor, secretTextsOfSecretValue } from './redaction.ts';
import type { RunDecisions } from './run-decisions.ts';
import type { RunConfigSource } from './run-secret-manifest.ts';
import type { ReferencedSecrets, Snapshot } from './snapshot.ts';
import { effectiveStateEncryption, stateEncryptionRefs } from './state-encryption.ts';
import { snapshotStateSuffix } from './state-identity.ts';
import { envSecretRefs, firstNotOptedIn, variablesFromRefs } from './variables-opt-in.ts';

/**
 * The inputs of one run (DESIGN.md section 9), resolved from the snapshot without I/O: `spec.variables`,
 * the `variablesFrom` Secret keys, the module input contract (Cluster API inputs), the backend and its Secret, the lock timeout and the decisions of the
 * step. Only the plan HMAC key is left to the shell (it lives in a Secret of its own, created once). Also
 * the secret values a redactor must know: exactly the Secret keys the inputs reference. A Secret that
 * variables are read from must have opted in (src/core/variables-opt-in.ts).
 */

/** A run's config source without the plan key; or why it cannot be built yet. */
export type RunInputs =
  | { kind: 'resolved'; source: Omit<RunConfigSource, 'planHmacKey'> }
  /**
   * A referenced Secret or key is missing; the message names it, never a value; `secret` names the Secret
   * whose creation or change ends the wait (absent when the spec itself is at fault).
   */
  | { kind: 'missing'; message: string; secret?: string }
  /** A Secret variables are read from lacks the opt-in label; the message names it and the label. */
  | { kind: 'not-opted-in'; secret: string; message: string };

/** A `variablesFrom` value: JSON when it parses (non-string variables), the raw text otherwise. */
function variableValue(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/**
 * Cluster API owns the object (a TerraformCluster's Cluster, a machine's Machine or MachinePool): its
 * state moves with its Cluster under `clusterctl move` (src/core/run-secret-manifest.ts).
 */
export function movesWithCluster(snap: Pick<Snapshot, 'capi' | 'ownedByClusterApi'>): boolean {
  return snap.capi?.owner !== undefined || snap.ownedByClusterApi === true;
}

/** Resolves the inputs of the snapshot's object's run of `op` (the next one, or one a step adopts). */
export function resolveRunInputs(
  snap: Pick<
    Snapshot,
    | 'ref'
    | 'uid'
    | 'jobs'
    | 'status'
    | 'spec'
    | 'referencedSecrets'
    | 'variablesSecretOptIns'
    | 'clusterName'
    | 'capi'
    | 'owningCluster'
    | 'ownedByClusterApi'
  >,
  op: Op,
  policy: EffectiveJobsPolicy,
  decisions: RunDecisions,
  /** The installation's default state encryption, for a spec that names none. */
  installationEncryption?: StateEncryption,
): RunInputs {
  const spec = snap.spec;
  if (!spec) return { kind: 'missing', message: 'the spec does not parse' };
  // Before any key is looked up: a Secret that did not opt in reveals not even which keys it has.
  const notOptedIn = firstNotOptedIn(
    [
      ...variablesFromRefs(spec.variablesFrom),
      ...envSecretRefs(policy.env),
      ...stateEncryptionRefs(spec.stateEncryption),
    ],
    snap.variablesSecretOptIns,
  );
  if (notOptedIn) return { kind: 'not-opted-in', ...notOptedIn };
  const secretVariables: Record<string, unknown> = {};
  for (const from of spec.variablesFrom ?? []) {
    const { name, key } = from.secretKeyRef;
    const data = snap.referencedSecrets.get(name);
    if (data === undefined)
      return {
        kind: 'missing',
        secret: name,
        message: `Secret ${name} (variable ${from.name}) does not exist`,
      };
    const value = data[key];
    if (value === undefined)
      return {
        kind: 'missing',
        secret: name,
        message: `Secret ${name} has no key ${key} (variable ${from.name})`,
      };
    secretVariables[from.name] = variableValue(value);
  }
  // Under Cluster API the first apply sets it once; no later plan may change it (issue 11 item 4). A
  // standalone machine may be replaced (approved) and re-identified.
  const providerID =
    snap.capi !== undefined &&
    snap.ref.kind === 'TerraformMachine' &&
    'providerID' in spec &&
    typeof spec.providerID === 'string'
      ? spec.providerID
      : undefined;
  // Likewise a Cluster API cluster's endpoint: the Cluster copies it once and never again (issue 23 item 11).
  const controlPlaneEndpoint =
    drivenByClusterApi(snap) &&
    snap.ref.kind === 'TerraformCluster' &&
    'controlPlaneEndpoint' in spec &&
    // An endpoint without a host (a port set ahead) is not set yet: the module's first one fills it.
    spec.controlPlaneEndpoint?.host
      ? spec.controlPlaneEndpoint
      : undefined;
  let backendSecretData: Record<string, string> = {};
  if (spec.backend?.secretRef) {
    const data = snap.referencedSecrets.get(spec.backend.secretRef.name);
    if (data === undefined)
      return {
        kind: 'missing',
        secret: spec.backend.secretRef.name,
        message: `backend Secret ${spec.backend.secretRef.name} does not exist`,
      };
    backendSecretData = { ...data };
  }
  const stateEncryption = effectiveStateEncryption(spec.stateEncryption, installationEncryption);
  return {
    kind: 'resolved',
    source: {
      kind: snap.ref.kind,
      namespace: snap.ref.namespace,
      stateSuffix: snapshotStateSuffix(snap),
      variables: spec.variables ?? {},
      secretVariables,
      contractInputs: moduleInputsOf({
        ref: snap.ref,
        ...(snap.clusterName !== undefined ? { clusterName: snap.clusterName } : {}),
        ...(snap.capi ? { capi: snap.capi } : {}),
        ...(snap.owningCluster?.exports ? { clusterExports: snap.owningCluster.exports } : {}),
        op,
      }),
      backend: spec.backend,
      backendSecretData,
      ...(stateEncryption ? { stateEncryption } : {}),
      ...(movesWithCluster(snap) ? { movesWithCluster: true } : {}),
      lockTimeoutSeconds: policy.lockTimeoutSeconds,
      applyPolicy: spec.applyPolicy,
      ...(decisions.expectedPlanDigest ? { expectedPlanDigest: decisions.expectedPlanDigest } : {}),
      ...(decisions.forceUnlockId ? { forceUnlockId: decisions.forceUnlockId } : {}),
      ...(providerID !== undefined ? { providerID } : {}),
      ...(controlPlaneEndpoint !== undefined ? { controlPlaneEndpoint } : {}),
      ...(spec.outputs ? { outputsSecretName: spec.outputs.secretName } : {}),
    },
  };
}

/**
 * The secret values of the object's inputs (DESIGN.md section 13): the value of each `variablesFrom` key,
 * every value of the backend Secret (the whole Secret is the backend's configuration), each with its JSON
 * leaves, and the Cluster API bootstrap data. Keys of those Secrets that no input references are not secret
 * to us.
 */
export function inputSecretTexts(
  spec: TargetSpec | undefined,
  secrets: ReferencedSecrets,
  bootstrapData?: BootstrapData,
): string[] {
  const texts: string[] = bootstrapData ? [bootstrapData.value] : [];
  if (!spec) return texts;
  for (const from of spec.variablesFrom ?? []) {
    const value = secrets.get(from.secretKeyRef.name)?.[from.secretKeyRef.key];
    if (value !== undefined) texts.push(...secretTextsOfSecretValue(value));
  }
  if (spec.backend?.secretRef) {
    for (const value of Object.values(secrets.get(spec.backend.secretRef.name) ?? {}))
      texts.push(...secretTextsOfSecretValue(value));
  }
  return texts;
}

/**
 * The redactor of a snapshot's object: it cuts {@link inputSecretTexts} out of free text (condition
 * messages, Event notes, outcome messages). Built by the planner and again by the shell where it composes
 * text, so no plan carries the secret values or a closure over them.
 */
export function snapshotRedactor(snap: Snapshot): Redactor {
  return createRedactor(inputSecretTexts(snap.spec, snap.referencedSecrets, snap.capi?.bootstrapData));
}
