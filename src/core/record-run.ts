import type { LastRun } from '../schemas/kinds/status.ts';
import type { TargetStatus } from '../schemas/kinds/target.ts';
import type { TerraformPlan } from '../schemas/kinds/terraform-plan.ts';
import { withRecorded } from './attempts.ts';
import { type Classification, type Evidence, pinnableImage } from './classify.ts';
import { conditionsAfterRun, findCondition } from './conditions.ts';
import { type EventReason, NOTE_MAX, type RunEvent, runEvent } from './event-spec.ts';
import { ANNOTATIONS } from './job-labels.ts';
import type { JobRecord } from './job-record.ts';
import type { LockVerdict } from './locks.ts';
import type { ObjectKind } from './object-ref.ts';
import { planName } from './plan-manifest.ts';
import type { Redactor } from './redaction.ts';
import type { JobView } from './views.ts';
import { timestampMs } from './views.ts';

/**
 * What bookkeeping one finished run changes (DESIGN.md section 7), computed without I/O: the status (lastRun
 * against the run's own generation and inputs hash, conditions, lastSuccess, the retry accounting of
 * `status.attempts`, the pinned image, the Cluster API contract fields), the spec contract fields, the
 * TerraformPlan changes and the Events. Free text (summaries, messages, notes) is redacted here, where it
 * is made; structured fields (outputs, names, references) never are.
 */

/** A change to a TerraformPlan that bookkeeping decided. */
export type PlanChange =
  | {
      kind: 'create';
      job: string;
      /** The pod whose log carries the readable plan (the pod whose result decided). */
      pod?: string;
      /** The target generation the run was made for. */
      generation: number;
      inputsHash: string;
      plan: NonNullable<Classification['runnerResult']>['plan'] & object;
    }
  | { kind: 'phase'; plan: TerraformPlan; phase: 'Applied' | 'Superseded'; job: string; message: string };

/** The object-level facts recording a run needs. */
export interface RunContext {
  kind: ObjectKind;
  now: Date;
  deleting: boolean;
  /** The object's spec as read (contract fields are compared against it). */
  spec: {
    image?: string;
    controlPlaneEndpoint?: { host?: string };
    providerID?: string;
    providerIDList?: string[];
  };
  /**
   * Cluster API drives the object (an owner Machine or MachinePool; a Cluster owns a TerraformCluster): a
   * machine is provisioned only once its providerID is known, as the InfraMachine contract requires, and
   * its providerID, or a cluster's controlPlaneEndpoint, once set is never changed.
   */
  capiDriven?: boolean;
  /** The live TerraformPlan of `status.pendingPlanRef`, if any. */
  pendingPlan?: TerraformPlan;
  redact: Redactor;
  /** The object's Jobs as read (seed the retry accounting of an object that stored none). */
  records: readonly JobRecord[];
}

/** The outcome of recording one run. */
export interface RecordedRun {
  status: TargetStatus;
  /** Spec fields to merge-patch (Cluster API contract), when any changed. */
  spec: Record<string, unknown>;
  plans: PlanChange[];
  events: RunEvent[];
}

/** DESIGN.md section 7 events, one per evidence; a new evidence without its row does not compile. */
export const RUN_EVENTS: Readonly<Record<Evidence, EventReason>> = {
  succeeded: 'JobSucceeded',
  'deadline-race': 'JobSucceeded',
  'step-failed': 'JobFailed',
  'image-layout': 'JobFailed',
  'state-decryption': 'JobFailed',
  'image-pull': 'JobFailed',
  deadline: 'JobDeadlineExceeded',
  interrupted: 'JobInterrupted',
  'destructive-blocked': 'DestructivePlanBlocked',
  'awaiting-approval': 'PlanAwaitingApproval',
  'plan-changed': 'PlanChanged',
  'lock-contended': 'StateLocked',
  'outputs-invalid': 'JobFailed',
  'provider-id-change': 'JobFailed',
  'control-plane-endpoint-change': 'JobFailed',
  unknown: 'JobFailed',
};

/** Longest `lastRun.error.summary` the schema accepts. */
const SUMMARY_MAX = 1024;

function iso(ms: number | undefined, fallback: Date): string {
  return new Date(ms ?? fallback.getTime()).toISOString();
}

function runGeneration(job: JobView): number {
  const value = Number.parseInt(job.metadata.annotations?.[ANNOTATIONS.generation] ?? '', 10);
  return Number.isNaN(value) || value < 0 ? 0 : value;
}

/** `lastRun` of one classified run, against the run's own generation and inputs hash (C04). */
export function lastRunOf(job: JobView, record: JobRecord, run: Classification, redactor: Redactor): LastRun {
  const result = run.runnerResult;
  return {
    job: record.name,
    op: run.op,
    attempt: Math.max(1, record.attempt),
    generation: runGeneration(job),
    inputsHash: record.inputsHash,
    startedAt: iso(
      timestampMs(job.status?.startTime) ?? timestampMs(job.metadata.creationTimestamp),
      run.finishedAt,
    ),
    finishedAt: run.finishedAt.toISOString(),
    result: run.result,
    reason: run.reason,
    ...(run.error
      ? {
          error: {
            kind: run.error.kind,
            ...(run.error.step ? { step: run.error.step } : {}),
            summary: redactor.redact(run.error.summary).slice(0, SUMMARY_MAX),
          },
        }
      : {}),
    ...(result && result.steps.length > 0 ? { steps: result.steps.slice(0, 16) } : {}),
    ...(result?.plan
      ? {
          plan: {
            digest: result.plan.digest,
            add: result.plan.add,
            change: result.plan.change,
            destroy: result.plan.destroy,
          },
        }
      : {}),
    ...(result?.drift ? { drift: result.drift } : {}),
    ...(run.warnings.length > 0 ? { warnings: run.warnings.slice(0, 8) } : {}),
  };
}

function note(text: string, redactor: Redactor): string {
  return redactor.redact(text).slice(0, NOTE_MAX);
}

/**
 * The pinned image after a successful apply (DESIGN.md section 2): the digest the `source` container ran as
 * its pod reports it (`imageID`), else a digest the runner reported, else the spec image when it is a
 * digest already. A tag is never pinned.
 */
function pinnedImageOf(run: Classification, specImage: string | undefined): string | undefined {
  return run.imageID ?? pinnableImage(run.runnerResult?.imageDigest) ?? pinnableImage(specImage);
}

/** Contract outputs of a successful apply: spec fields to patch and status fields to set. */
function contractFields(
  kind: ObjectKind,
  run: Classification,
  spec: RunContext['spec'],
  status: TargetStatus,
  capiDriven: boolean | undefined,
): { spec: Record<string, unknown>; status: TargetStatus } {
  const outputs = run.outputs;
  const specPatch: Record<string, unknown> = {};
  const next: TargetStatus = { ...status };
  if (!outputs) return { spec: specPatch, status: next };
  if (kind === 'TerraformCluster') {
    // Under Cluster API set once, never changed (the Cluster copies it once; a plan that would change it is
    // refused before apply); a standalone cluster follows its module.
    // An endpoint without a host (a port set ahead) is not set yet.
    const settable = !spec.controlPlaneEndpoint?.host || capiDriven !== true;
    if (
      outputs.controlPlaneEndpoint &&
      JSON.stringify(spec.controlPlaneEndpoint) !== JSON.stringify(outputs.controlPlaneEndpoint) &&
      settable
    ) {
      specPatch.controlPlaneEndpoint = outputs.controlPlaneEndpoint;
    }
    if (outputs.failureDomains) next.failureDomains = outputs.failureDomains;
    if (outputs.exports) next.exports = outputs.exports;
  }
  if (kind === 'TerraformMachine') {
    // Under Cluster API set once, never changed (it replaces Machines; a plan that would change it is
    // refused before apply); a standalone machine that was replaced takes its new identity.
    const settable = spec.providerID === undefined || capiDriven !== true;
    if (outputs.providerID !== undefined && outputs.providerID !== spec.providerID && settable)
      specPatch.providerID = outputs.providerID;
    if (outputs.addresses) next.addresses = outputs.addresses as TargetStatus['addresses'];
  }
  if (kind === 'TerraformMachinePool') {
    if (
      outputs.providerIDList &&
      JSON.stringify(outputs.providerIDList) !== JSON.stringify(spec.providerIDList)
    ) {
      specPatch.providerIDList = outputs.providerIDList;
    }
    if (outputs.replicas !== undefined) next.replicas = outputs.replicas;
  }
  return { spec: specPatch, status: next };
}

/**
 * Records one finished run onto `status` (DESIGN.md section 7). Pure. Events are keyed by the Job name, so
 * a step repeated after a crash emits each of them once.
 */
export function recordRun(
  status: TargetStatus,
  job: JobView,
  record: JobRecord,
  run: Classification & { lock?: LockVerdict },
  context: RunContext,
): RecordedRun {
  const lock = run.lock;
  const finishedAt = run.finishedAt.toISOString();
  let next: TargetStatus = {
    ...status,
    lastRun: lastRunOf(job, record, run, context.redact),
    attempts: withRecorded(status.attempts, context.records, {
      op: run.op,
      attempt: record.attempt,
      evidence: run.evidence,
      finishedAtMs: run.finishedAt.getTime(),
    }),
  };
  let spec: Record<string, unknown> = {};
  const plans: PlanChange[] = [];
  const events: RunEvent[] = [];
  const generation = runGeneration(job);

  if (run.success) next.lastSuccess = { ...next.lastSuccess, [run.op]: finishedAt };
  if (run.success && run.op === 'apply') {
    next.appliedInputsHash = record.inputsHash;
    next.appliedGeneration = generation;
    const pinned = pinnedImageOf(run, context.spec.image);
    if (pinned !== undefined) next.source = { ...next.source, pinnedImage: pinned };
    const contract = contractFields(context.kind, run, context.spec, next, context.capiDriven);
    next = contract.status;
    spec = contract.spec;
    const provisioned = !(
      context.capiDriven === true &&
      context.kind === 'TerraformMachine' &&
      (context.spec.providerID ?? contract.spec.providerID) === undefined
    );
    next.ready = provisioned;
    next.initialization = { ...next.initialization, provisioned };
  }
  if (run.success && (run.op === 'apply' || run.op === 'refresh')) {
    // Where the outputs went and the names of the non-sensitive ones (issue 24 item 3); never a value. A
    // run that wrote no outputs Secret (the spec names none now) leaves no stale pointer behind.
    const written = run.runnerResult?.outputsSecret;
    if (written)
      next.outputs = { secretName: written.name, ...(written.outputs ? { names: written.outputs } : {}) };
    else delete next.outputs;
  }
  if (run.success && run.op === 'destroy') {
    next.ready = false;
    next.initialization = { ...next.initialization, provisioned: false };
  }

  const provisioned = next.ready === true;
  const before = next.conditions ?? [];
  next.conditions = conditionsAfterRun(
    before,
    run,
    { provisioned, deleting: context.deleting },
    { now: context.now, generation },
  );
  if (next.activeJob?.name === record.name) delete next.activeJob;
  delete next.waitReason;
  delete next.nextAttemptAt;

  const pending = context.pendingPlan;
  const plan = run.runnerResult?.plan;
  const blocked =
    run.evidence === 'destructive-blocked' ||
    run.evidence === 'awaiting-approval' ||
    run.evidence === 'plan-changed';
  if (blocked && plan) {
    if (pending && pending.metadata.name !== planName(record.name)) {
      plans.push({
        kind: 'phase',
        plan: pending,
        phase: 'Superseded',
        job: record.name,
        message: `superseded by the plan of ${record.name}`,
      });
    }
    plans.push({
      kind: 'create',
      job: record.name,
      ...(run.pod !== undefined ? { pod: run.pod } : {}),
      generation,
      inputsHash: record.inputsHash,
      plan,
    });
    next.pendingPlanRef = { name: planName(record.name) };
  }
  if (run.success && run.op === 'apply' && pending) {
    // Applied only by a run of the plan's own inputs that made exactly the approved plan (section 11).
    const applied =
      pending.spec.approved &&
      plan?.digest === pending.spec.digest &&
      pending.spec.inputsHash === record.inputsHash;
    plans.push({
      kind: 'phase',
      plan: pending,
      phase: applied ? 'Applied' : 'Superseded',
      job: record.name,
      message: applied ? `applied by ${record.name}` : `superseded: ${record.name} applied other inputs`,
    });
    if (applied)
      events.push(
        runEvent('PlanApplied', {
          action: 'Bookkeep',
          note: `plan ${pending.metadata.name} applied by ${record.name}`,
          transitionKey: record.name,
        }),
      );
    delete next.pendingPlanRef;
  }

  const summary = run.error?.summary;
  events.push(
    runEvent(RUN_EVENTS[run.evidence], {
      action: 'Bookkeep',
      note: note(
        `${run.op} Job ${record.name} ${run.result} (${run.reason})${summary ? `: ${summary}` : ''}`,
        context.redact,
      ),
      transitionKey: record.name,
    }),
  );
  if (run.evidence === 'step-failed' && summary) {
    events.push(
      runEvent('StepFailed', {
        action: 'Bookkeep',
        note: note(`${run.error?.step ?? 'step'}: ${summary}`, context.redact),
        transitionKey: record.name,
      }),
    );
  }
  if (lock?.kind === 'foreign') {
    events.push(
      runEvent('StateLocked', {
        action: 'Bookkeep',
        note: note(
          `the state lock is held by ${lock.who}, not by this object's Jobs; it is never unlocked`,
          context.redact,
        ),
        transitionKey: record.name,
      }),
    );
  }
  if (run.extraPods.length > 0) {
    events.push(
      runEvent('ExtraPod', {
        action: 'Bookkeep',
        note: `Job ${record.name} had more than one pod; ${run.pod ?? 'none'} decided, ignored: ${run.extraPods.join(', ')}`,
        transitionKey: record.name,
      }),
    );
  }
  const driftBefore = findCondition(before, 'DriftDetected')?.status;
  const driftAfter = findCondition(next.conditions, 'DriftDetected');
  if (driftAfter && driftAfter.status !== driftBefore) {
    if (driftAfter.status === 'True') {
      events.push(
        runEvent('DriftDetected', {
          action: 'Bookkeep',
          note: `drift check ${record.name} found changes`,
          transitionKey: record.name,
        }),
      );
    } else if (driftBefore === 'True') {
      events.push(
        runEvent('DriftResolved', {
          action: 'Bookkeep',
          note: `drift resolved (${driftAfter.reason})`,
          transitionKey: record.name,
        }),
      );
    }
  }
  return { status: next, spec, plans, events };
}
