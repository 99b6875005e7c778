import {
  type ContractOutputs,
  checkContractOutputs,
  invalidOutputsSummary,
} from '../schemas/contract-outputs.ts';
import type { TargetKind } from '../schemas/kinds/api-group.ts';
import type { ConditionStatus } from '../schemas/kinds/condition.ts';
import type { RecordedResult, RunErrorKind } from '../schemas/kinds/status.ts';
import {
  type Op,
  type ParsedResult,
  parseRunnerResult,
  type RunnerResult,
  type StepName,
} from '../schemas/result.ts';
import { finishedCondition, jobDeadlineExceeded } from './job-conditions.ts';
import { type JobView, type PodView, type Timestamp, timestampMs } from './views.ts';

/**
 * Bookkeeping classification (DESIGN.md section 7): what a finished Job's evidence means. The runner's result
 * document is the primary evidence; the exit code and the Job's conditions are cross-checks. Evidence that
 * is missing, cut or contradictory is classified too, never thrown.
 */

/** The rows of the section 7 table, one per kind of evidence. */
export const EVIDENCE = [
  'succeeded',
  'deadline-race',
  'step-failed',
  'image-layout',
  'state-decryption',
  'image-pull',
  'deadline',
  'interrupted',
  'destructive-blocked',
  'awaiting-approval',
  'plan-changed',
  'lock-contended',
  'outputs-invalid',
  'provider-id-change',
  'control-plane-endpoint-change',
  'unknown',
] as const;
export type Evidence = (typeof EVIDENCE)[number];

/**
 * The condition reasons a bookkept run gives (DESIGN.md section 7), each with its meaning: the one list
 * `EVIDENCE_TABLE` draws from, and what docs/reference/conditions.md is generated from (`npm run gen:docs`).
 */
export const RUN_REASONS = {
  ApplySucceeded: 'The apply ran to the end; its outputs, and the image digest it ran, are recorded.',
  DestroySucceeded: 'The destroy ran to the end; the finalizer is removed next.',
  DriftChecked: 'The drift check ran; its finding is the `DriftDetected` condition.',
  Refreshed: 'The health refresh (`apply -refresh-only`) ran to the end.',
  ApplyFailed:
    'An apply step failed (`lastRun.error` names the step and a curated summary), or the run left no readable result (`error.kind: unknown`).',
  DestroyFailed:
    'A destroy step failed, or the run left no readable result; the object keeps its finalizer and the destroy is retried.',
  DriftJobFailed: 'A drift check or refresh step failed, or the run left no readable result.',
  ImageInvalid:
    'The module image breaks the image contract: `/captf/module/` or an executable `/captf/runtime` is missing (docs/image-contract.md).',
  StateDecryptionFailed:
    'The state encryption passphrase could not be read, or no configured passphrase (nor the fallback) opens the state or plan; nothing was changed (docs/runbooks/state-decryption.md).',
  ImagePullFailed:
    'An image of the Job (the module image or the runner image) could not be pulled before the deadline.',
  JobDeadlineExceeded:
    'An apply or destroy Job ran past `spec.jobs.activeDeadlineSeconds` and was killed, whatever the runner wrote.',
  DriftJobDeadlineExceeded:
    'A drift check or refresh Job ran past `spec.jobs.activeDeadlineSeconds` and was killed.',
  JobInterrupted:
    'The pod was drained, evicted or preempted, or the Job deleted, before it finished; retried at once, from the fifth in a row on after the backoff.',
  DestructivePlanBlocked:
    'The plan deletes or replaces resources; nothing was applied, a TerraformPlan waits for approval.',
  PlanAwaitingApproval:
    '`applyPolicy: Manual`: the plan has changes; nothing was applied, a TerraformPlan waits for approval.',
  PlanChanged:
    'The plan no longer matches the approved TerraformPlan; nothing was applied, a new TerraformPlan waits for approval.',
  LockContended:
    'The state lock is held by another live pod of this object; retried 30 s later, uncounted, from the fifth in a row on after the backoff.',
  OutputsInvalid:
    'The run finished, but an output the Cluster API contract fields refuse could not be recorded (the summary names it).',
  ProviderIDChange:
    "The plan would change a provisioned machine's providerID; nothing was applied (Cluster API replaces Machines, it never re-identifies one).",
  ControlPlaneEndpointChange:
    'The plan would change the controlPlaneEndpoint of a Cluster API cluster; nothing was applied (Cluster API copies it into the Cluster once, it never changes it).',
} as const satisfies Record<string, string>;
export type RunReason = keyof typeof RUN_REASONS;

/** Warnings recorded next to a result when the evidence disagreed. */
export type ClassificationWarning = 'DeadlineRace' | 'RunnerContractViolation' | 'ExtraPod';

interface EvidenceRow {
  result: RecordedResult;
  /** Counts toward backoff (DESIGN.md section 4). */
  counted: boolean;
  /** An interruption that is not a deadline kill: retried at once, with its own cap. */
  interruption: boolean;
  /** Success of the run (the success conditions of section 7). */
  success: boolean;
  conditionStatus: ConditionStatus;
  /**
   * `lastRun.error.kind` when the runner's result was read; without a readable result it is `unknown`
   * (DESIGN.md section 7). Absent for a success.
   */
  errorKind?: RunErrorKind;
  reason: Readonly<Record<Op, RunReason>>;
}

const SAME = (reason: RunReason): Readonly<Record<Op, RunReason>> => ({
  apply: reason,
  destroy: reason,
  drift: reason,
  refresh: reason,
});
const SUCCEEDED_REASONS: Readonly<Record<Op, RunReason>> = {
  apply: 'ApplySucceeded',
  destroy: 'DestroySucceeded',
  drift: 'DriftChecked',
  refresh: 'Refreshed',
};
const FAILED_REASONS: Readonly<Record<Op, RunReason>> = {
  apply: 'ApplyFailed',
  destroy: 'DestroyFailed',
  drift: 'DriftJobFailed',
  refresh: 'DriftJobFailed',
};
const DEADLINE_REASONS: Readonly<Record<Op, RunReason>> = {
  apply: 'JobDeadlineExceeded',
  destroy: 'JobDeadlineExceeded',
  drift: 'DriftJobDeadlineExceeded',
  refresh: 'DriftJobDeadlineExceeded',
};

/** DESIGN.md section 7, one row per evidence; "is it counted?" is answered here and nowhere else. */
export const EVIDENCE_TABLE: Readonly<Record<Evidence, EvidenceRow>> = {
  succeeded: {
    result: 'succeeded',
    counted: false,
    interruption: false,
    success: true,
    conditionStatus: 'True',
    reason: SUCCEEDED_REASONS,
  },
  'deadline-race': {
    result: 'succeeded',
    counted: false,
    interruption: false,
    success: true,
    conditionStatus: 'True',
    reason: SUCCEEDED_REASONS,
  },
  'step-failed': {
    result: 'failed',
    counted: true,
    interruption: false,
    success: false,
    conditionStatus: 'False',
    errorKind: 'step',
    reason: FAILED_REASONS,
  },
  'image-layout': {
    result: 'failed',
    counted: true,
    interruption: false,
    success: false,
    conditionStatus: 'False',
    errorKind: 'image-layout',
    reason: SAME('ImageInvalid'),
  },
  // A wrong or unreadable passphrase: nothing ran against the state; retried after the backoff, as the fix
  // (the right passphrase, or the old one as the fallback) is a spec or Secret change.
  'state-decryption': {
    result: 'failed',
    counted: true,
    interruption: false,
    success: false,
    conditionStatus: 'False',
    errorKind: 'state-decryption',
    reason: SAME('StateDecryptionFailed'),
  },
  'image-pull': {
    result: 'failed',
    counted: true,
    interruption: false,
    success: false,
    conditionStatus: 'False',
    errorKind: 'unknown',
    reason: SAME('ImagePullFailed'),
  },
  deadline: {
    result: 'failed',
    counted: true,
    interruption: false,
    success: false,
    conditionStatus: 'False',
    errorKind: 'interrupted',
    reason: DEADLINE_REASONS,
  },
  interrupted: {
    result: 'interrupted',
    counted: false,
    interruption: true,
    success: false,
    conditionStatus: 'Unknown',
    errorKind: 'interrupted',
    reason: SAME('JobInterrupted'),
  },
  'destructive-blocked': {
    result: 'blocked',
    counted: false,
    interruption: false,
    success: false,
    conditionStatus: 'Unknown',
    errorKind: 'blocked',
    reason: SAME('DestructivePlanBlocked'),
  },
  'awaiting-approval': {
    result: 'blocked',
    counted: false,
    interruption: false,
    success: false,
    conditionStatus: 'Unknown',
    errorKind: 'blocked',
    reason: SAME('PlanAwaitingApproval'),
  },
  'plan-changed': {
    result: 'blocked',
    counted: false,
    interruption: false,
    success: false,
    conditionStatus: 'Unknown',
    errorKind: 'plan-changed',
    reason: SAME('PlanChanged'),
  },
  // A lock held by a live holder waits (30 s) and is not counted (DESIGN.md section 4).
  'lock-contended': {
    result: 'failed',
    counted: false,
    interruption: false,
    success: false,
    conditionStatus: 'Unknown',
    errorKind: 'step',
    reason: SAME('LockContended'),
  },
  // The apply ran, but an output the Cluster API contract fields refuse could never be recorded (section 7).
  'outputs-invalid': {
    result: 'failed',
    counted: true,
    interruption: false,
    success: false,
    conditionStatus: 'False',
    errorKind: 'step',
    reason: SAME('OutputsInvalid'),
  },
  // Refused before anything was applied; retried after the backoff in case the inputs change back.
  'provider-id-change': {
    result: 'failed',
    counted: true,
    interruption: false,
    success: false,
    conditionStatus: 'False',
    errorKind: 'step',
    reason: SAME('ProviderIDChange'),
  },
  // Refused before anything was applied; retried after the backoff in case the inputs change back.
  'control-plane-endpoint-change': {
    result: 'failed',
    counted: true,
    interruption: false,
    success: false,
    conditionStatus: 'False',
    errorKind: 'step',
    reason: SAME('ControlPlaneEndpointChange'),
  },
  unknown: {
    result: 'failed',
    counted: true,
    interruption: false,
    success: false,
    conditionStatus: 'False',
    errorKind: 'unknown',
    reason: FAILED_REASONS,
  },
};

/** The container that runs the runner (DESIGN.md section 9). */
export const SOURCE_CONTAINER = 'source';
/** Waiting reasons that mean an image of the Job (module or runner) cannot be pulled (DESIGN.md section 7). */
export const PULL_FAILURE_REASONS: readonly string[] = [
  'ErrImagePull',
  'ImagePullBackOff',
  'InvalidImageName',
];
/** The exit code of a SIGKILL (OOM kill or a kill after the grace period). */
const EXIT_SIGKILL = 137;

/** What bookkeeping needs to classify one finished Job. */
export interface ClassifyInput {
  op: Op;
  /** The kind of the Job's object: which contract outputs its CRD records (all when absent). */
  kind?: TargetKind;
  job: JobView;
  /** Every pod of the Job (src/core/pods.ts `podsOfJob`: by the Job's UID), in any order. */
  pods: readonly PodView[];
  /**
   * The controller saw the pull trouble while the Job ran (`status.waitReason: ImagePullBackOff`). It is
   * evidence of an image pull failure only when the Job hit its deadline and the `source` container never
   * ran (a pull that recovered is judged by what the container did).
   */
  observedPullTrouble?: boolean;
  /** What the status said about that trouble (it names the container whose image could not be pulled). */
  observedPullMessage?: string;
  /** The controller itself enforced the deadline because the Job controller was late (section 5, step 4). */
  deadlineEnforced?: boolean;
  /**
   * The lock the run reported is held by another live pod of this object (read live, DESIGN.md section 12):
   * the run waits for it, uncounted (section 4, with its own cap). A foreign holder is no such excuse: that
   * run is a step failure like any other, counted.
   */
  lockBlocksRun?: boolean;
  /** The clock, used only when the Job carries no finish time. */
  now: Date;
}

/** The verdict on one finished Job. */
export interface Classification {
  op: Op;
  evidence: Evidence;
  result: RecordedResult;
  /** Condition reason of section 7, e.g. `ApplySucceeded`, `JobDeadlineExceeded`. */
  reason: RunReason;
  counted: boolean;
  interruption: boolean;
  success: boolean;
  conditionStatus: ConditionStatus;
  error?: { kind: RunErrorKind; step?: StepName; summary: string };
  warnings: ClassificationWarning[];
  /** The pod whose evidence decided; absent when no pod was left. */
  pod?: string;
  /** Other pods of the same Job (C01); named by the `ExtraPod` warning. */
  extraPods: string[];
  /** The runner's result document, when one parsed. */
  runnerResult?: RunnerResult;
  /** The contract outputs of a successful run, each as its CRD field accepts it. */
  outputs?: ContractOutputs;
  /**
   * The image the `source` container ran, as the kubelet reports it (`imageID`, a digest reference), when
   * the container started: what `status.source.pinnedImage` pins (DESIGN.md section 2).
   */
  imageID?: string;
  finishedAt: Date;
}

interface PodEvidence {
  name: string;
  createdMs: number;
  exitCode?: number;
  terminationReason?: string;
  finishedAt?: Timestamp | null;
  parsed: ParsedResult;
  /** A pull failure of any of the pod's containers, the runner init container included. */
  pull?: PullFailure;
  /** The `source` container's `imageID`, when the kubelet reported one. */
  imageID?: string;
  /**
   * The `source` container started, so its image was pulled: running, or terminated with a start time. A
   * container killed before it ever started is reported `terminated` too (137, `ContainerStatusUnknown`), but
   * without `startedAt`.
   */
  ran: boolean;
  disrupted: boolean;
  deadline: boolean;
}

/** A container whose image cannot be pulled, with the kubelet's waiting reason. */
export interface PullFailure {
  container: string;
  reason: string;
  /** The image reference that cannot be pulled, when the kubelet reported it. */
  image?: string;
}

/** Whether a terminated container's `startedAt` says it started (absent or `null` says it never did). */
export function hasStartTime(startedAt: Timestamp | null | undefined): boolean {
  return startedAt !== undefined && startedAt !== null;
}

/** The first pull failure among the pod's containers (init containers first, as the kubelet runs them). */
export function podPullFailure(pod: PodView): PullFailure | undefined {
  const statuses = [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])];
  for (const status of statuses) {
    const reason = status.state?.waiting?.reason;
    if (reason !== undefined && PULL_FAILURE_REASONS.includes(reason))
      return { container: status.name, reason, ...(status.image ? { image: status.image } : {}) };
  }
  return undefined;
}

/**
 * A digest reference from a kubelet's `imageID`: container runtimes report `repo@sha256:…`, Docker's shim
 * `docker-pullable://repo@sha256:…`; an ID without a repository cannot be pulled and is not pinned.
 */
export function pinnableImage(imageID: string | undefined): string | undefined {
  const id = imageID?.replace(/^[a-z-]+:\/\//, '');
  return id !== undefined && /^[^@\s]+@sha256:[0-9a-f]{64}$/.test(id) ? id : undefined;
}

function podEvidence(pod: PodView): PodEvidence {
  const source = pod.status?.containerStatuses?.find((c) => c.name === SOURCE_CONTAINER);
  const terminated = source?.state?.terminated;
  const pull = podPullFailure(pod);
  const imageID = pinnableImage(source?.imageID);
  return {
    name: pod.metadata.name,
    createdMs: timestampMs(pod.metadata.creationTimestamp) ?? 0,
    ...(terminated ? { exitCode: terminated.exitCode, finishedAt: terminated.finishedAt } : {}),
    ...(terminated?.reason ? { terminationReason: terminated.reason } : {}),
    parsed: parseRunnerResult(terminated?.message),
    ...(pull ? { pull } : {}),
    ...(imageID ? { imageID } : {}),
    ran: source?.state?.running !== undefined || hasStartTime(terminated?.startedAt),
    disrupted:
      pod.status?.conditions?.some((c) => c.type === 'DisruptionTarget' && c.status === 'True') ?? false,
    deadline: pod.status?.reason === 'DeadlineExceeded',
  };
}

/** The pod with exit 0 and a valid `succeeded` result wins (C01); otherwise the newest pod. */
function pickWinner(pods: PodEvidence[]): PodEvidence | undefined {
  const succeeded = pods.find(
    (p) => p.exitCode === 0 && p.parsed.ok && p.parsed.result.result === 'succeeded',
  );
  if (succeeded) return succeeded;
  return [...pods].sort((a, b) => b.createdMs - a.createdMs || a.name.localeCompare(b.name))[0];
}

function finishTime(job: JobView, winner: PodEvidence | undefined, now: Date): Date {
  const ms =
    timestampMs(job.status?.completionTime) ??
    timestampMs(finishedCondition(job)?.lastTransitionTime) ??
    timestampMs(winner?.finishedAt);
  return ms === undefined ? now : new Date(ms);
}

interface Verdict {
  evidence: Evidence;
  summary?: string;
  step?: StepName;
  violation?: boolean;
}

/** The verdict from a result document that parsed (section 7, rows with a result). */
function fromResult(
  result: RunnerResult,
  input: ClassifyInput,
  winner: PodEvidence,
  deadline: boolean,
): Verdict {
  const { op } = input;
  const lockBlocksRun = input.lockBlocksRun === true;
  const exitZero = winner.exitCode === 0;
  if (result.op !== op) {
    return {
      evidence: deadline ? 'deadline' : 'unknown',
      violation: true,
      summary: `runner reported op ${result.op} for a ${op} Job`,
    };
  }
  switch (result.result) {
    case 'succeeded': {
      if (exitZero) {
        const invalid = checkContractOutputs(result.outputs, input.kind).invalid;
        if (invalid.length > 0)
          return { evidence: 'outputs-invalid', summary: invalidOutputsSummary(invalid) };
        return { evidence: deadline ? 'deadline-race' : 'succeeded' };
      }
      // The stricter reading wins: a succeeded result with a non-zero exit is not a success.
      return {
        evidence: deadline ? 'deadline' : 'unknown',
        violation: true,
        summary: `runner exited ${winner.exitCode ?? 'without an exit code'} but reported succeeded`,
      };
    }
    case 'failed': {
      const base = { violation: exitZero };
      if (deadline) return { ...base, evidence: 'deadline' };
      if (!result.error)
        return {
          ...base,
          evidence: 'unknown',
          violation: true,
          summary: 'runner reported failed without an error',
        };
      // The kernel's OOM killer picks the largest process of the container's cgroup: usually the runtime the
      // runner started, so the runner reports a step killed by SIGKILL while the runtime (containerd) marks
      // the container OOMKilled. The summary keeps both, so the fix (a higher memory limit) is visible.
      const summary =
        winner.terminationReason === 'OOMKilled'
          ? `${result.error.summary} (the source container was OOM-killed; raise spec.jobs.resources.limits.memory)`
          : result.error.summary;
      const withError = { ...base, step: result.error.step, summary };
      if (result.error.kind === 'image-layout') return { ...withError, evidence: 'image-layout' };
      if (result.error.kind === 'state-decryption') return { ...withError, evidence: 'state-decryption' };
      if (result.error.reason === 'OutputsInvalid') return { ...withError, evidence: 'outputs-invalid' };
      if (result.error.reason === 'ProviderIDChange') return { ...withError, evidence: 'provider-id-change' };
      if (result.error.reason === 'ControlPlaneEndpointChange')
        return { ...withError, evidence: 'control-plane-endpoint-change' };
      if (result.lock && lockBlocksRun) return { ...withError, evidence: 'lock-contended' };
      return { ...withError, evidence: 'step-failed' };
    }
    case 'interrupted':
      return {
        evidence: deadline ? 'deadline' : 'interrupted',
        violation: exitZero,
        summary: result.error?.summary ?? 'the runner was stopped before it finished',
      };
    // A plan that waits for a person: the runner exits 0 (section 10), a runner of an earlier release 4 or 5;
    // the result alone says what happened, so no exit code contradicts it.
    case 'blocked':
      if (deadline) return { evidence: 'deadline' };
      return result.plan?.destructive
        ? {
            evidence: 'destructive-blocked',
            summary: 'the plan destroys or replaces resources; it waits for approval',
          }
        : { evidence: 'awaiting-approval', summary: 'the plan waits for approval' };
    case 'plan-changed':
      return {
        evidence: deadline ? 'deadline' : 'plan-changed',
        summary: 'the plan no longer matches the approved plan',
      };
  }
}

/** The verdict when no valid result came back (missing, cut, not JSON, killed). */
function withoutResult(
  winner: PodEvidence | undefined,
  deadline: boolean,
  pullTrouble: { seen: boolean; message?: string },
  parsed: ParsedResult,
): Verdict {
  // Section 7: the pod waited on its image "until the deadline"; a container that ran says what happened.
  // The pod may be gone by now (the Job controller deletes it at the deadline): the status remembers.
  if (pullTrouble.seen && deadline && !winner?.ran) {
    const summary = winner?.pull
      ? `the image ${winner.pull.image ? `${winner.pull.image} ` : ''}of container ${winner.pull.container} could not be pulled before the deadline (${winner.pull.reason})`
      : pullTrouble.message
        ? `the deadline passed while ${pullTrouble.message}`
        : 'an image of the Job could not be pulled before the deadline';
    return { evidence: 'image-pull', summary };
  }
  // C08: a deadline kill often leaves no container status and no result; that is not a parse error.
  if (deadline)
    return { evidence: 'deadline', summary: 'the Job ran past activeDeadlineSeconds and was killed' };
  if (winner?.disrupted)
    return { evidence: 'interrupted', summary: 'the pod was disrupted (drain, eviction or preemption)' };
  if (!winner) return { evidence: 'unknown', summary: 'the Job left no pod to read a result from' };
  if (winner.terminationReason === 'OOMKilled') {
    return {
      evidence: 'unknown',
      summary: 'the source container was OOM-killed; raise spec.jobs.resources.limits.memory',
    };
  }
  if (winner.exitCode === EXIT_SIGKILL)
    return { evidence: 'unknown', summary: 'the source container was killed (exit 137) without a result' };
  if (!parsed.ok && parsed.reason !== 'missing') return { evidence: 'unknown', summary: parsed.message };
  if (winner.exitCode === 0)
    return { evidence: 'unknown', violation: true, summary: 'runner exited 0 without a result' };
  return {
    evidence: 'unknown',
    summary: `runner exited ${winner.exitCode ?? 'without an exit code'} without a result`,
  };
}

/**
 * Classifies a finished Job from its conditions, its pods and the runner's result (DESIGN.md section 7).
 * Pure; never throws for any evidence, however incomplete.
 */
export function classifyJob(input: ClassifyInput): Classification {
  const pods = input.pods.map(podEvidence);
  const winner = pickWinner(pods);
  const deadline =
    input.deadlineEnforced === true || jobDeadlineExceeded(input.job) || (winner?.deadline ?? false);
  const parsed: ParsedResult = winner?.parsed ?? parseRunnerResult(undefined);
  const pullTrouble = {
    seen: input.observedPullTrouble === true || winner?.pull !== undefined,
    ...(input.observedPullMessage ? { message: input.observedPullMessage } : {}),
  };
  const verdict = winner?.parsed.ok
    ? fromResult(winner.parsed.result, input, winner, deadline)
    : withoutResult(winner, deadline, pullTrouble, parsed);
  const row = EVIDENCE_TABLE[verdict.evidence];
  const extraPods = pods.filter((p) => p !== winner).map((p) => p.name);
  const warnings: ClassificationWarning[] = [];
  if (verdict.evidence === 'deadline-race') warnings.push('DeadlineRace');
  if (verdict.violation) warnings.push('RunnerContractViolation');
  if (extraPods.length > 0) warnings.push('ExtraPod');
  return {
    op: input.op,
    evidence: verdict.evidence,
    result: row.result,
    reason: row.reason[input.op],
    counted: row.counted,
    interruption: row.interruption,
    success: row.success,
    conditionStatus: row.conditionStatus,
    ...(row.errorKind
      ? {
          error: {
            kind: parsed.ok ? row.errorKind : 'unknown',
            ...(verdict.step ? { step: verdict.step } : {}),
            // A blank summary (the runner's own may be '') says nothing: the reason stands in.
            summary: verdict.summary?.trim() ? verdict.summary : row.reason[input.op],
          },
        }
      : {}),
    warnings,
    ...(winner ? { pod: winner.name } : {}),
    extraPods,
    ...(parsed.ok ? { runnerResult: parsed.result } : {}),
    ...(row.success && parsed.ok
      ? { outputs: checkContractOutputs(parsed.result.outputs, input.kind).outputs }
      : {}),
    ...(winner?.imageID && winner.ran ? { imageID: winner.imageID } : {}),
    finishedAt: finishTime(input.job, winner, input.now),
  };
}
