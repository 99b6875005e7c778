import type { TargetKind } from '../schemas/kinds/api-group.ts';

/** Label and annotation keys on our Jobs, pods and per-run Secrets (DESIGN.md section 9). */
export const LABELS = {
  managed: 'captf.io/managed',
  ownerKind: 'captf.io/owner-kind',
  ownerName: 'captf.io/owner-name',
  ownerUid: 'captf.io/owner-uid',
  op: 'captf.io/op',
  attempt: 'captf.io/attempt',
  /** On a run log Secret: the Job whose run it holds (src/core/run-log.ts). */
  job: 'captf.io/job',
  /** `"true"` on a run log Secret, so `kubectl get secret -l captf.io/run-log=true` lists them. */
  runLog: 'captf.io/run-log',
  clusterName: 'cluster.x-k8s.io/cluster-name',
} as const;

export const ANNOTATIONS = {
  /** The inputs hash the Job runs with (section 3: input changes are compared against it). */
  inputsHash: 'captf.io/inputs-hash',
  /** The object generation the Job was started for (section 7: lastRun records it). */
  generation: 'captf.io/generation',
  /** Set only after the status write that recorded the Job succeeded (section 5, step 3). */
  bookkept: 'captf.io/bookkept',
  /** The classification evidence written at bookkeeping; retry accounting reads it (section 4). */
  outcome: 'captf.io/outcome',
  /** When the Job finished, as bookkeeping saw it (RFC 3339). */
  finishedAt: 'captf.io/finished-at',
  /**
   * When the run started (RFC 3339), on its run log Secret: the runner's start, or the `source` container's
   * when the controller kept the log from the pod. The Secret is made as the run ends, so its creation is no
   * start (src/core/run-history.ts).
   */
  startedAt: 'captf.io/started-at',
  /**
   * The state suffix the Job runs with (src/core/state-identity.ts): a step that created the Job but died
   * (or lost a Conflict) before its status write recorded `status.stateSuffix` finds it here.
   */
  stateSuffix: 'captf.io/state-suffix',
} as const;

/**
 * Our finalizer on every Job pod (set on the pod template; the Job controller copies template finalizers to
 * its pods). A deleted pod, and the runner's result in its termination message, stays readable until
 * bookkeeping has read it: "never a lost result" (DESIGN.md section 7), as the Job controller's own
 * `batch.kubernetes.io/job-tracking` finalizer keeps pods until it counted them. Released by
 * src/core/pod-release.ts rules.
 */
export const POD_RESULT_FINALIZER = 'captf.io/result';

/**
 * The Cluster API cluster a Job's run took its Redis guards in: its `cluster.x-k8s.io/cluster-name` label,
 * written from the object's cluster when the Job was created (undefined: none, the object's own lease
 * group). Cluster API may adopt the object while the Job runs (a TerraformCluster its Cluster names after
 * the first apply began); the run's lease is renewed and released where it was taken, never left held in
 * the old group until its TTL.
 */
export function runClusterOf(job: { metadata?: { labels?: Record<string, string> } }): string | undefined {
  const name = job.metadata?.labels?.[LABELS.clusterName];
  return name === undefined || name === '' ? undefined : name;
}

/** The short kind code in Job names (section 9). */
export const KIND_CODES: Readonly<Record<TargetKind, 'c' | 'm' | 'mp'>> = {
  TerraformCluster: 'c',
  TerraformMachine: 'm',
  TerraformMachinePool: 'mp',
};

/** The object something belongs to, as its labels name it. */
export interface LabelOwner {
  kind: TargetKind;
  name: string;
  uid: string;
  /** The Cluster API cluster; no `cluster.x-k8s.io/cluster-name` label when absent or empty. */
  clusterName?: string | undefined;
}

/**
 * The labels that tie a Job, its pods, its per-run Secret or a TerraformPlan to its object, so events about
 * them map back to the object without a read (DESIGN.md sections 9 and 13).
 */
export function ownerLabels(owner: LabelOwner): Record<string, string> {
  return {
    [LABELS.managed]: 'true',
    [LABELS.ownerKind]: owner.kind,
    [LABELS.ownerName]: owner.name,
    [LABELS.ownerUid]: owner.uid,
    // An empty value would still match `cluster-name=` selectors; an object without a cluster has no label.
    ...(owner.clusterName ? { [LABELS.clusterName]: owner.clusterName } : {}),
  };
}
