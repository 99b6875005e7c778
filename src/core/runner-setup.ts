import { API_VERSION } from '../schemas/kinds/api-group.ts';
import type { EffectiveJobsPolicy } from '../schemas/kinds/jobs-policy.ts';
import type { StateEncryption } from '../schemas/kinds/state-encryption.ts';
import { movesWithCluster } from './run-inputs.ts';
import { type RunnerIdentity, runnerAccountOf } from './runner-identity.ts';
import type { Snapshot } from './snapshot.ts';
import { effectiveStateEncryption } from './state-encryption.ts';
import { provisionedBy } from './state-evidence.ts';
import { snapshotStateSuffix } from './state-identity.ts';

/**
 * What the step that adds our finalizer (an object's first step) puts in place for the object's first Job
 * (issue 22: the Job-creating step pays only for the Job): the plan HMAC key Secret and the runner identity
 * (src/core/runner-identity.ts). The Job step still makes sure of both before its Job (the plan key by one
 * read; the identity by reading its RoleBinding's digest and its lock Lease, unless Redis remembers the
 * check this setup made: src/step/runner-identity.ts `ensureCheckedRunnerIdentity`), so this is a head
 * start, never a guarantee anything relies on: a setup that crashed or was refused is finished by the Job
 * step, exactly as if it never ran.
 */
export interface RunnerSetup {
  /** The state suffix the plan key Secret is named by (src/step/run-config.ts `planKeySecretName`). */
  stateSuffix: string;
  /** The runner identity; absent when the Job step must build it itself (see {@link runnerSetupOf}). */
  identity?: RunnerIdentity;
}

/**
 * The setup of an object whose finalizer this step adds; undefined when the first step sets nothing up:
 * a spec that does not parse (nothing runs from it), or an object Cluster API pauses (`clusterctl move`
 * pauses the target's copies while it creates the state Secret it moves, and an empty one created first
 * would take its name). No identity either (so no empty state Secret and Lease) when the object shows it
 * was provisioned (src/core/state-evidence.ts: its state is checked before a Job, issue 23 item 5), when
 * its Jobs run as an account the spec names, or when it names an outputs Secret (granted only once the Job
 * step has made sure that Secret is the object's: src/core/outputs-secret.ts).
 */
export function runnerSetupOf(
  snap: Snapshot,
  policy: EffectiveJobsPolicy,
  installationEncryption: StateEncryption | undefined,
): RunnerSetup | undefined {
  const spec = snap.spec;
  if (!spec || snap.paused) return undefined;
  const stateSuffix = snapshotStateSuffix(snap);
  if (provisionedBy(snap, snap.status) !== undefined || spec.outputs !== undefined) return { stateSuffix };
  const stateEncryption = effectiveStateEncryption(spec.stateEncryption, installationEncryption);
  const { identity } = runnerAccountOf(policy.serviceAccountName, {
    owner: {
      apiVersion: API_VERSION,
      kind: snap.ref.kind,
      name: snap.ref.name,
      namespace: snap.ref.namespace,
      uid: snap.uid,
    },
    source: {
      namespace: snap.ref.namespace,
      stateSuffix,
      backend: spec.backend,
      ...(stateEncryption ? { stateEncryption } : {}),
      ...(movesWithCluster(snap) ? { movesWithCluster: true } : {}),
    },
  });
  return { stateSuffix, ...(identity ? { identity } : {}) };
}
