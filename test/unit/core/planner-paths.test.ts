import { describe, expect, it } from 'vitest';
import { DELETE_FOR_MOVE_ANNOTATION } from '../../../src/core/block-move.ts';
import { describePlan } from '../../../src/core/describe-plan.ts';
import { runSecretName } from '../../../src/core/names.ts';
import { heldOutcome } from '../../../src/core/planner/start.ts';
import { planStep } from '../../../src/core/planner.ts';
import { FINALIZER, MANAGED_BY_ANNOTATION } from '../../../src/core/preamble.ts';
import type { Snapshot } from '../../../src/core/snapshot.ts';
import { ACCEPT_EMPTY_STATE_ANNOTATION } from '../../../src/core/state-evidence.ts';
import type { HeldWait, Move, PlanFacts, PlanRead, StepPlan } from '../../../src/core/step-plan.ts';
import type { JobView, PodView } from '../../../src/core/views.ts';
import { API_VERSION } from '../../../src/schemas/kinds/api-group.ts';
import { TARGET_SCHEMAS } from '../../../src/schemas/kinds/registry.ts';
import type { TerraformPlan } from '../../../src/schemas/kinds/terraform-plan.ts';
import { appliedAtRest, iso, planFacts, pod, record, result, snapshot, T0 } from './builders.ts';

/**
 * One row per path of DESIGN.md section 5 the planner decides (steps 2 to 8; steps 1 and 9 are the shell's
 * step lock): a snapshot and the plan's kind, move and reason. The wait a start's guards impose at perform
 * time (steps 6 and 8) is planned by `heldOutcome` from the start's data. Every plan is plain data
 * (issue 22): it survives `structuredClone`, which refuses any function.
 */

const JOB = 'captf-m-web-apply-a1-abcdef';
const SPEC = snapshot().spec as NonNullable<Snapshot['spec']>;
const JOB_UID = 'job-uid';

/** An applied machine at rest (the builders' own). */
const atRest = appliedAtRest;

/** The apply Job `JOB`, created `createdAt` seconds after T0 (started then), with `deadline` seconds. */
function applyJob(createdAt: number, deadline = 3600, finished = false): JobView {
  return {
    metadata: {
      name: JOB,
      uid: JOB_UID,
      resourceVersion: '5',
      creationTimestamp: iso(createdAt),
      labels: { 'captf.io/op': 'apply', 'captf.io/attempt': '1' },
      annotations: { 'captf.io/inputs-hash': 'h1' },
    },
    spec: { activeDeadlineSeconds: deadline },
    status: finished
      ? {
          startTime: iso(createdAt),
          succeeded: 1,
          completionTime: iso(-1),
          conditions: [{ type: 'Complete', status: 'True', lastTransitionTime: iso(-1) }],
        }
      : { startTime: iso(createdAt), active: 1 },
  };
}

/** A pod of `JOB` in `phase`, its `source` container as given. */
function jobPod(name: string, phase: string, state: Parameters<typeof pod>[1]): PodView {
  const view = pod(name, state, { phase });
  return {
    ...view,
    metadata: { ...view.metadata, ownerReferences: [{ kind: 'Job', name: JOB, uid: JOB_UID }] },
  } as PodView;
}

/** A machine whose apply Job `JOB` runs, created `createdAt` seconds after T0. */
function running(createdAt = -30, deadline = 3600, extra: Partial<Snapshot> = {}): Snapshot {
  return snapshot({
    status: {
      stateSuffix: 'm-web',
      activeJob: { name: JOB, op: 'apply', attempt: 1, startedAt: iso(createdAt) },
    } as Snapshot['status'],
    jobs: [applyJob(createdAt, deadline)],
    records: [
      record('apply', 'succeeded', 0, {
        name: JOB,
        attempt: 1,
        finished: false,
        bookkept: false,
        createdAtMs: Date.parse(iso(createdAt)),
      }),
    ],
    ...extra,
  });
}

/**
 * A pod `JOB` left when it was deleted with orphaning (src/core/orphaned-pods.ts): no owner reference, on
 * node `n1` unless `node` is false.
 */
function orphanPod(name: string, phase: string, node = true): PodView {
  const view = pod(name, phase === 'Running' ? { running: true } : { exitCode: 0 }, { phase });
  return {
    ...view,
    metadata: {
      ...view.metadata,
      uid: `uid-${name}`,
      resourceVersion: '9',
      labels: {
        'captf.io/managed': 'true',
        'captf.io/owner-uid': 'uid-m-web',
        'batch.kubernetes.io/controller-uid': JOB_UID,
      },
    },
    ...(node ? { spec: { nodeName: 'n1' } } : {}),
  };
}

/** A machine whose active Job `JOB` is gone before it was bookkept (deleted with orphaning, or by hand). */
function lostActive(): Snapshot {
  return { ...running(), jobs: [], records: [] };
}

/** The pod of `JOB` that ran its apply to success and reported so. */
const succeededPod = (): PodView =>
  jobPod('p1', 'Succeeded', {
    exitCode: 0,
    message: JSON.stringify(result({ op: 'apply', result: 'succeeded' })),
  });

/** A machine whose apply Job `JOB` completed and is not bookkept yet. */
function finished(): Snapshot {
  return snapshot({
    status: { stateSuffix: 'm-web' } as Snapshot['status'],
    jobs: [applyJob(-120, 3600, true)],
    records: [
      record('apply', 'succeeded', -1, {
        name: JOB,
        attempt: 1,
        bookkept: false,
        createdAtMs: Date.parse(iso(-120)),
      }),
    ],
  });
}

/** A machine whose last apply failed (counted) a moment ago, with the same inputs. */
function failedJustNow(): Snapshot {
  const failed = record('apply', 'step-failed', -5, { inputsHash: 'h1' });
  return snapshot({
    status: { stateSuffix: 'm-web' } as Snapshot['status'],
    records: [failed],
  });
}

/** `failedJustNow`, deleting, its status recording the failed apply (so its pods may live). */
function failedDeleting(): Snapshot {
  const snap = deleting(failedJustNow());
  const apply = { last: 1, recorded: 1, failures: 1, interruptions: 0, lockContentions: 0 };
  return { ...snap, status: { ...snap.status, attempts: { apply } } as Snapshot['status'] };
}

/**
 * A deleting machine whose only Job was deleted before it finished and never bookkept (orphaned, or by a
 * person): only `status.attempts` shows it ran.
 */
function orphanedDeleting(): Snapshot {
  const apply = { last: 1, recorded: 1, failures: 0, interruptions: 1, lockContentions: 0 };
  return deleting(snapshot({ status: { stateSuffix: 'm-web', attempts: { apply } } as Snapshot['status'] }));
}

/** An applied machine, deleting, whose lost state a person accepted (`captf.io/accept-empty-state`). */
function acceptedLostState(): Snapshot {
  return deleting(
    atRest({ meta: { finalizers: [FINALIZER], annotations: { [ACCEPT_EMPTY_STATE_ANNOTATION]: 'true' } } }),
  );
}

/** A TerraformPlan of the machine, waiting for approval. */
function pendingPlan(snap: Snapshot): TerraformPlan {
  return {
    apiVersion: API_VERSION,
    kind: 'TerraformPlan',
    metadata: { name: 'j1-plan', resourceVersion: '7', creationTimestamp: iso(-10) },
    spec: {
      targetRef: { kind: 'TerraformMachine', name: snap.ref.name, uid: snap.uid },
      inputsHash: snap.inputsHash,
      digest: `sha256:${'d'.repeat(64)}`,
      add: 0,
      change: 1,
      destroy: 0,
      destructive: false,
      job: 'j1',
      approved: false,
    },
    status: { phase: 'Pending' },
  };
}

const deleting = (snap: Snapshot): Snapshot => ({
  ...snap,
  meta: { ...snap.meta, deletionTimestamp: iso(-1) },
});

/** What a row expects: a read, or a plan's move and outcome (and the wait its status records). */
type Want =
  | { read: PlanRead }
  | { move: Move['kind']; reason: string; waitReason?: string; check?: (plan: StepPlan) => void };

interface Row {
  id: string;
  /** The step of DESIGN.md section 5 (or the section) the path belongs to. */
  step: string;
  name: string;
  facts: () => PlanFacts;
  want: Want;
}

const rows: Row[] = [
  {
    id: 'P1',
    step: '2 preamble',
    name: 'an externally managed object is left alone',
    facts: () => planFacts(snapshot({ meta: { annotations: { [MANAGED_BY_ANNOTATION]: 'other' } } })),
    want: { move: 'none', reason: 'ExternallyManaged' },
  },
  {
    id: 'P2',
    step: '2 preamble',
    name: 'a deleting object without our finalizer is not ours',
    facts: () => planFacts(snapshot({ meta: { deletionTimestamp: iso(-1) } })),
    want: { move: 'none', reason: 'DeletingWithoutFinalizer' },
  },
  {
    id: 'P3',
    step: '2 preamble',
    name: 'the finalizer is added first, and the step stops there',
    facts: () => planFacts(snapshot({ meta: {} })),
    want: {
      move: 'finalizers',
      reason: 'FinalizerAdded',
      check: (plan) => expect(plan.move).toMatchObject({ finalizers: [FINALIZER], gone: false }),
    },
  },
  {
    id: 'P4',
    step: '2 read',
    name: 'unlisted, an idle object rests without its Jobs',
    facts: () => planFacts(atRest({ jobsUnread: true })),
    want: { move: 'rest', reason: 'UpToDate' },
  },
  {
    id: 'P5',
    step: '2 read',
    name: 'unlisted, a start lists the Jobs first',
    facts: () => planFacts(atRest({ jobsUnread: true, inputsHash: 'h2' })),
    want: { read: 'jobs' },
  },
  {
    id: 'P6',
    step: '2 read',
    name: 'a finished Job is bookkept only once the pods are read',
    facts: () => planFacts(finished(), { pods: undefined }),
    want: { read: 'pods' },
  },
  {
    id: 'P7',
    step: 'section 6',
    name: 'a status that does not parse: nothing runs',
    facts: () => planFacts(atRest({ statusUnreadable: ['status.lastRun'] })),
    want: { move: 'none', reason: 'StatusUnreadable', waitReason: 'StatusUnreadable' },
  },
  {
    id: 'P8',
    step: '3 bookkeep',
    name: 'a finished Job is recorded (oldest first), then the object rests',
    facts: () => planFacts(finished(), { pods: [succeededPod()] }),
    want: {
      move: 'rest',
      reason: 'ApplySucceeded',
      check: (plan) =>
        expect(plan.bookkept.map((run) => [run.record.name, run.classification.reason])).toEqual([
          [JOB, 'ApplySucceeded'],
        ]),
    },
  },
  {
    id: 'P9',
    step: '2 pause',
    name: 'paused: a finished Job is still bookkept, nothing starts',
    facts: () => planFacts({ ...finished(), inputsHash: 'h2', paused: true }, { pods: [succeededPod()] }),
    want: {
      move: 'rest',
      reason: 'Paused',
      waitReason: 'Paused',
      check: (plan) => expect(plan.bookkept).toHaveLength(1),
    },
  },
  {
    id: 'P10',
    step: '4 watch',
    name: 'a Job that runs is watched',
    facts: () => planFacts(running(), { pods: [jobPod('p1', 'Running', { running: true })] }),
    want: { move: 'watch', reason: 'JobActive', waitReason: 'JobActive' },
  },
  {
    id: 'P11',
    step: '4 watch',
    name: 'pull trouble is shown at once',
    facts: () =>
      planFacts(running(), {
        pods: [jobPod('p1', 'Pending', { waiting: 'ImagePullBackOff' })],
        runSecretExists: true,
      }),
    want: { move: 'watch', reason: 'ImagePullBackOff', waitReason: 'ImagePullBackOff' },
  },
  {
    id: 'P12',
    step: '4 watch',
    name: 'a Job with no started pod needs its per-run Secret read',
    facts: () => planFacts(running(), { pods: [] }),
    want: { read: 'run-secret' },
  },
  {
    id: 'P13',
    step: '4 watch',
    name: 'an adopted Job (its per-run Secret missing) gets it from the same inputs',
    facts: () => planFacts(running(-30), { pods: [], runSecretExists: false }),
    want: {
      move: 'watch',
      reason: 'JobActive',
      check: (plan) => expect(plan.move.kind === 'watch' && plan.move.adopt !== undefined).toBe(true),
    },
  },
  {
    id: 'P14',
    step: '4 watch',
    name: 'the deadline is enforced when the Job controller is late: recorded, then deleted',
    facts: () => planFacts(running(-2000, 600), { pods: [jobPod('p1', 'Running', { running: true })] }),
    want: {
      move: 'delete-job',
      reason: 'JobDeadlineExceeded',
      check: (plan) => expect(plan.bookkept.map((run) => run.record.name)).toEqual([JOB]),
    },
  },
  {
    id: 'P15',
    step: '4 watch',
    name: 'a Job stuck over a minute without its per-run Secret is deleted',
    facts: () =>
      planFacts(running(-120), {
        pods: [jobPod('p1', 'Pending', 'no-status')],
        runSecretExists: false,
      }),
    want: { move: 'delete-job', reason: 'StuckJobDeleted' },
  },
  {
    id: 'P16',
    step: '4 watch',
    name: 'deleting, an apply Job whose source never started is deleted',
    facts: () =>
      planFacts(deleting(running(-30)), {
        pods: [jobPod('p1', 'Pending', { waiting: 'ContainerCreating' })],
        runSecretExists: true,
      }),
    want: { move: 'delete-job', reason: 'UnstartedJobDeleted' },
  },
  {
    id: 'P17',
    step: '5 decide',
    name: 'nothing to do: the object rests',
    facts: () => planFacts(atRest()),
    want: { move: 'rest', reason: 'UpToDate' },
  },
  {
    id: 'P18',
    step: '5 decide',
    name: 'deleting with nothing to destroy: the finalizer goes',
    facts: () => planFacts(deleting(snapshot({ spec: { ...SPEC, backend: { type: 's3' } } }))),
    want: {
      move: 'finalizers',
      reason: 'DeletingWithoutState',
      check: (plan) => expect(plan.move).toMatchObject({ finalizers: [], gone: true }),
    },
  },
  {
    id: 'P19',
    step: '5 decide',
    name: 'deleting with the default backend: the state is read before the finalizer goes',
    facts: () => planFacts(deleting(snapshot())),
    want: { read: 'state' },
  },
  {
    id: 'P20',
    step: '5 decide',
    name: 'deleting with an empty state: its objects go with the finalizer',
    facts: () => planFacts(deleting(snapshot()), { state: 'missing' }),
    want: {
      move: 'finalizers',
      reason: 'DeletingWithoutState',
      check: (plan) => {
        expect(plan.move).toMatchObject({ gone: true, state: { stateSecret: expect.any(String) } });
        // Nothing ever ran: nothing to explain.
        expect(plan.events).toEqual([]);
      },
    },
  },
  {
    id: 'P21',
    step: '5 decide',
    name: 'a copy clusterctl move deletes leaves its state to clusterctl',
    facts: () =>
      planFacts(
        deleting(
          atRest({ meta: { finalizers: [FINALIZER], annotations: { [DELETE_FOR_MOVE_ANNOTATION]: '' } } }),
        ),
      ),
    want: {
      move: 'finalizers',
      reason: 'DeletingForMove',
      check: (plan) => expect(plan.move).toEqual({ kind: 'finalizers', finalizers: [], gone: true }),
    },
  },
  {
    id: 'P22',
    step: 'section 2',
    name: 'a spec that does not parse starts nothing',
    facts: () => planFacts(atRest({ spec: undefined, specProblem: 'spec.source: Required' })),
    want: { move: 'rest', reason: 'SpecInvalid', waitReason: 'SpecInvalid' },
  },
  {
    id: 'P23',
    step: '5 gates',
    name: 'backoff after a counted failure',
    facts: () => planFacts(failedJustNow()),
    want: { move: 'rest', reason: 'Backoff', waitReason: 'Backoff' },
  },
  {
    id: 'P24',
    step: '5 gates',
    name: 'an apply waits for its plan to be approved',
    facts: () => {
      const snap = snapshot();
      return planFacts({ ...snap, pendingPlan: pendingPlan(snap) });
    },
    want: { move: 'rest', reason: 'AwaitingApproval', waitReason: 'AwaitingApproval' },
  },
  {
    id: 'P25',
    step: '5 gates',
    name: 'a pause starts nothing',
    facts: () => planFacts(snapshot({ paused: true })),
    want: { move: 'rest', reason: 'Paused', waitReason: 'Paused' },
  },
  {
    id: 'P26',
    step: '5 gates',
    name: 'a machine waits for its cluster',
    facts: () => planFacts(snapshot({ owningCluster: { name: 'c1', ready: false } })),
    want: {
      move: 'rest',
      reason: 'WaitingForDependencies',
      waitReason: 'WaitingForDependencies',
      check: (plan) =>
        expect(plan.outcome.waitsFor).toEqual([
          { kind: 'TerraformCluster', namespace: 'default', name: 'c1' },
        ]),
    },
  },
  {
    id: 'P27',
    step: '5 gates',
    name: 'the slots are read once the earlier gates pass',
    facts: () => planFacts(snapshot(), { slots: undefined }),
    want: { read: 'slots' },
  },
  {
    id: 'P28',
    step: '5 gates',
    name: 'every Job slot of the installation is taken',
    facts: () => planFacts(snapshot(), { slots: { installation: 200, cluster: undefined } }),
    want: { move: 'rest', reason: 'WaitingForJobSlot', waitReason: 'WaitingForJobSlot' },
  },
  {
    id: 'P29',
    step: '5 gates',
    name: 'a Jobs policy whose lock timeout is not below its deadline',
    facts: () =>
      planFacts(
        snapshot({
          owningCluster: { name: 'c1', ready: true, defaultsJobs: { activeDeadlineSeconds: 60 } },
          spec: { ...SPEC, jobs: { lockTimeoutSeconds: 120 } },
        }),
      ),
    want: { move: 'rest', reason: 'JobPolicyInvalid', waitReason: 'JobPolicyInvalid' },
  },
  {
    id: 'P30',
    step: '7 API guard',
    name: 'a pod of an earlier attempt still runs',
    facts: () =>
      planFacts(failedJustNow(), {
        now: new Date(T0.getTime() + 3_600_000),
        pods: [jobPod('p0', 'Running', { running: true })],
      }),
    want: { move: 'rest', reason: 'WaitingForPreviousAttempt', waitReason: 'WaitingForPreviousAttempt' },
  },
  {
    id: 'P31',
    step: '6 inputs',
    name: 'a missing variables Secret holds the start back before anything is taken',
    facts: () =>
      planFacts(
        snapshot({
          spec: TARGET_SCHEMAS.TerraformMachine.spec.parse({
            source: { image: 'registry.example.com/m:1' },
            variablesFrom: [{ name: 'token', secretKeyRef: { name: 'not-yet', key: 'token' } }],
          }),
        }),
      ),
    want: {
      move: 'rest',
      reason: 'WaitingForDependencies',
      waitReason: 'WaitingForDependencies',
      check: (plan) => expect(plan.outcome.waitsFor).toEqual([expect.objectContaining({ name: 'not-yet' })]),
    },
  },
  {
    id: 'P32',
    step: '5 decide (section 3)',
    name: 'a provisioned object whose state is gone never applies from it unasked',
    facts: () => planFacts(atRest({ inputsHash: 'h2' }), { state: 'missing' }),
    want: { move: 'rest', reason: 'StateMissing', waitReason: 'StateMissing' },
  },
  {
    id: 'P33',
    step: '8 start',
    name: 'a first apply starts its Job',
    facts: () => planFacts(snapshot()),
    want: {
      move: 'start',
      reason: 'NoState',
      waitReason: 'JobActive',
      check: (plan) => expect(plan.move).toMatchObject({ start: { op: 'apply', attempt: 1, skipped: [] } }),
    },
  },
  {
    id: 'P34',
    step: '8 start',
    name: "a name held by another's finished Job is passed over",
    facts: () => {
      const first = planStep(planFacts(snapshot()));
      const taken = first.kind === 'plan' && first.move.kind === 'start' ? first.move.start.name : 'none';
      return planFacts(snapshot(), { takenJobNames: [taken] });
    },
    want: {
      move: 'start',
      reason: 'NoState',
      check: (plan) => expect(plan.move).toMatchObject({ start: { attempt: 2 } }),
    },
  },
  {
    id: 'P35',
    step: '5 decide',
    name: 'deleting with state: the destroy starts',
    facts: () => planFacts(deleting(atRest()), { state: 'resources' }),
    want: {
      move: 'start',
      reason: 'Deleting',
      check: (plan) => expect(plan.move).toMatchObject({ start: { op: 'destroy' } }),
    },
  },
  {
    id: 'P36',
    step: '5 decide (section 3)',
    name: 'deleting a provisioned object whose state is gone: no destroy from nothing unasked',
    facts: () => planFacts(deleting(atRest()), { state: 'missing' }),
    want: {
      move: 'rest',
      reason: 'StateMissing',
      waitReason: 'StateMissing',
      check: (plan) => {
        expect(plan.outcome.message).toContain('without a destroy');
        // On the condition of the op that waits (a destroy's is ApplyJobSucceeded, section 7).
        const conditions = plan.status?.conditions ?? [];
        expect(conditions.find((c) => c.type === 'ApplyJobSucceeded')).toMatchObject({
          reason: 'StateMissing',
        });
      },
    },
  },
  {
    id: 'P37',
    step: '5 decide (section 3)',
    name: 'deleting, the lost state accepted: the finalizer goes without a Job, saying what stays',
    facts: () => planFacts(acceptedLostState(), { state: 'missing' }),
    want: {
      move: 'finalizers',
      reason: 'DeletingWithoutState',
      check: (plan) => {
        expect(plan.move).toMatchObject({ gone: true, state: { cleanup: { kind: 'delete' } } });
        expect(plan.events).toEqual([expect.objectContaining({ reason: 'DestroySkipped', type: 'Warning' })]);
        expect(plan.events[0]?.note).toContain('stays until removed by hand');
        expect(plan.outcome.message).toBe(plan.events[0]?.note);
      },
    },
  },
  {
    id: 'P38',
    step: '5 decide (section 3)',
    name: 'deleting, every apply failed: the pods are read first (one may still write the state)',
    facts: () => planFacts(failedDeleting(), { pods: undefined }),
    want: { read: 'pods' },
  },
  {
    id: 'P38b',
    step: '5 decide (section 3)',
    name: 'deleting, every apply failed, no pod lives: the state is read before a destroy starts',
    facts: () => planFacts(failedDeleting(), { pods: [] }),
    want: { read: 'state' },
  },
  {
    id: 'P38c',
    step: '5 decide (section 3)',
    name: 'deleting, every apply failed, a pod of the deleted Job still runs: it is waited for, the state unread',
    facts: () => planFacts(failedDeleting(), { pods: [jobPod('p1', 'Running', { running: true })] }),
    want: { move: 'rest', reason: 'WaitingForPreviousAttempt', waitReason: 'WaitingForPreviousAttempt' },
  },
  {
    id: 'P39',
    step: '5 decide (section 3)',
    name: 'deleting, every apply failed and left no resource in the state: the finalizer goes, no destroy',
    facts: () => planFacts(failedDeleting(), { pods: [], state: 'unwritten' }),
    want: {
      move: 'finalizers',
      reason: 'DeletingWithoutState',
      check: (plan) => {
        expect(plan.move).toMatchObject({ gone: true, state: { cleanup: { kind: 'delete' } } });
        // Jobs ran: an Event says why no destroy did.
        expect(plan.events).toEqual([
          expect.objectContaining({ reason: 'DestroyNotNeeded', type: 'Normal', action: 'Finalize' }),
        ]);
        expect(plan.events[0]?.note).toMatch(
          /no Job of this object succeeded .* was never written by OpenTofu/,
        );
      },
    },
  },
  {
    id: 'P40',
    step: '5 decide (section 3)',
    name: 'deleting, every apply failed but one left resources in the state: destroy',
    facts: () => planFacts(failedDeleting(), { pods: [], state: 'resources' }),
    want: {
      move: 'start',
      reason: 'Deleting',
      // Failures are counted per op (section 4): the failed applies hold no destroy back.
      check: (plan) => expect(plan.move).toMatchObject({ start: { op: 'destroy' } }),
    },
  },
  {
    id: 'P41',
    step: '5 decide (section 3)',
    name: 'deleting, no apply on record, spec.providerID set and the state gone: a person decides',
    facts: () =>
      planFacts(deleting(snapshot({ spec: { ...SPEC, providerID: 'aws:///eu-west-1a/i-1' } })), {
        state: 'missing',
      }),
    want: { move: 'rest', reason: 'StateMissing', waitReason: 'StateMissing' },
  },
  {
    id: 'P42',
    step: '5 decide (section 3)',
    name: 'deleting, its only Job deleted unfinished (orphaned), its pod still runs: waited for before the state is read',
    facts: () => planFacts(orphanedDeleting(), { pods: [jobPod('p1', 'Running', { running: true })] }),
    want: { move: 'rest', reason: 'WaitingForPreviousAttempt', waitReason: 'WaitingForPreviousAttempt' },
  },
  {
    id: 'P42b',
    step: '5 decide (section 3)',
    name: 'deleting, its only Job deleted unfinished: the pods are read before the state',
    facts: () => planFacts(orphanedDeleting(), { pods: undefined }),
    want: { read: 'pods' },
  },
  {
    id: 'P42c',
    step: '5 decide (section 3)',
    name: 'deleting, its only Job deleted unfinished, no pod left: the state decides',
    facts: () => planFacts(orphanedDeleting(), { pods: [], state: 'unwritten' }),
    want: {
      move: 'finalizers',
      reason: 'DeletingWithoutState',
      // Its attempt was recorded: a Job of it ran, so the Event says why no destroy did.
      check: (plan) => expect(plan.events.map((e) => e.reason)).toEqual(['DestroyNotNeeded']),
    },
  },
  {
    id: 'P42d',
    step: '5 decide (section 3)',
    name: 'deleting, an attempt number only passed over (a predecessor held its Job name), nothing recorded: no Job of it ran, no Event',
    facts: () =>
      planFacts(
        deleting(
          snapshot({
            status: {
              stateSuffix: 'm-web',
              attempts: {
                apply: { last: 1, recorded: 0, failures: 0, interruptions: 0, lockContentions: 0 },
              },
            } as Snapshot['status'],
          }),
        ),
        { pods: [], state: 'missing' },
      ),
    want: {
      move: 'finalizers',
      reason: 'DeletingWithoutState',
      check: (plan) => expect(plan.events).toEqual([]),
    },
  },
  {
    id: 'P43',
    step: '5 decide (section 3)',
    name: 'deleting, the lost state accepted, a pod of an earlier attempt still runs: waited for first',
    facts: () =>
      planFacts(acceptedLostState(), {
        state: 'missing',
        pods: [jobPod('p1', 'Running', { running: true })],
      }),
    want: { move: 'rest', reason: 'WaitingForPreviousAttempt', waitReason: 'WaitingForPreviousAttempt' },
  },
  {
    id: 'P44',
    step: '2 preamble (pause)',
    name: 'deleting with nothing to destroy under Cluster API pause: the finalizer stays until the pause is lifted',
    facts: () => planFacts(deleting(snapshot({ paused: true, spec: { ...SPEC, backend: { type: 's3' } } }))),
    want: {
      move: 'rest',
      reason: 'Paused',
      waitReason: 'Paused',
      check: (plan) =>
        expect(plan.status?.conditions).toContainEqual(
          expect.objectContaining({ type: 'Paused', status: 'True' }),
        ),
    },
  },
  {
    id: 'P44b',
    step: '2 preamble (pause)',
    name: 'deleting with an empty state under pause: no state object goes either',
    facts: () => planFacts(deleting(snapshot({ paused: true })), { state: 'missing' }),
    want: { move: 'rest', reason: 'Paused', waitReason: 'Paused' },
  },
  {
    id: 'P44c',
    step: '2 preamble (pause)',
    name: 'a copy clusterctl move deletes goes under the pause the move set',
    facts: () =>
      planFacts(
        deleting(
          atRest({
            paused: true,
            meta: { finalizers: [FINALIZER], annotations: { [DELETE_FOR_MOVE_ANNOTATION]: '' } },
          }),
        ),
      ),
    want: { move: 'finalizers', reason: 'DeletingForMove' },
  },
  {
    id: 'P45',
    step: '3 bookkeep',
    name: 'the active Job is gone unbookkept, no pod of it left: JobInterrupted, its per-run Secret deleted by name, the retry starts',
    facts: () => planFacts(lostActive(), { pods: [] }),
    want: {
      move: 'start',
      reason: 'NoState',
      check: (plan) => {
        expect(plan.lostRunSecrets).toEqual([runSecretName(JOB)]);
        expect(plan.events.map((e) => e.reason)).toEqual(['JobInterrupted']);
        expect(plan.deletePods).toEqual([]);
        // A dry run says so (DESIGN.md section 13).
        expect(describePlan(plan, lostActive()).message).toContain(
          `would delete the lost run's per-run Secret ${runSecretName(JOB)}`,
        );
      },
    },
  },
  {
    id: 'P45b',
    step: '3 bookkeep',
    name: 'the active Job deleted with orphaning, its pod still runs on a node: waited for, not deleted; the Secret goes',
    facts: () => planFacts(lostActive(), { pods: [orphanPod('p1', 'Running')] }),
    want: {
      move: 'rest',
      reason: 'WaitingForPreviousAttempt',
      waitReason: 'WaitingForPreviousAttempt',
      check: (plan) => {
        expect(plan.lostRunSecrets).toEqual([runSecretName(JOB)]);
        expect(plan.deletePods).toEqual([]);
      },
    },
  },
  {
    id: 'P45c',
    step: '7 API guard',
    name: 'an orphaned pod that ended is deleted by the start that finds it; one never started is deleted and waited for',
    facts: () =>
      planFacts(
        {
          ...snapshot({
            status: {
              stateSuffix: 'm-web',
              attempts: {
                apply: { last: 1, recorded: 1, failures: 0, interruptions: 1, lockContentions: 0 },
              },
            } as Snapshot['status'],
          }),
        },
        { pods: [orphanPod('p-ended', 'Succeeded'), orphanPod('p-unbound', 'Pending', false)] },
      ),
    want: {
      move: 'rest',
      reason: 'WaitingForPreviousAttempt',
      check: (plan) => {
        expect(plan.deletePods).toEqual([
          { name: 'p-ended', uid: 'uid-p-ended', resourceVersion: '9' },
          { name: 'p-unbound', uid: 'uid-p-unbound', resourceVersion: '9' },
        ]);
        expect(describePlan(plan, snapshot()).message).toContain(
          'would delete the orphaned pod(s) p-ended, p-unbound',
        );
        expect(plan.lostRunSecrets).toEqual([]);
      },
    },
  },
  {
    id: 'P45e',
    step: '3 bookkeep',
    name: 'a finished Job deleted with orphaning, still listed: its result is read from the orphaned pod, which stays until the Job goes',
    facts: () => {
      const owned = succeededPod();
      const orphaned = { ...owned, metadata: { ...orphanPod('p1', 'Succeeded').metadata } };
      return planFacts(finished(), { pods: [orphaned] });
    },
    want: {
      move: 'rest',
      reason: 'ApplySucceeded',
      check: (plan) => {
        expect(plan.bookkept.map((run) => run.classification.reason)).toEqual(['ApplySucceeded']);
        expect(plan.deletePods).toEqual([]);
      },
    },
  },
  {
    id: 'P45d',
    step: '7 API guard',
    name: "an ended pod its gone Job still owns is the garbage collector's, not deleted here",
    facts: () =>
      planFacts(
        snapshot({
          status: {
            stateSuffix: 'm-web',
            attempts: { apply: { last: 1, recorded: 1, failures: 0, interruptions: 1, lockContentions: 0 } },
          } as Snapshot['status'],
        }),
        { pods: [succeededPod()] },
      ),
    want: { move: 'start', reason: 'NoState', check: (plan) => expect(plan.deletePods).toEqual([]) },
  },
];

describe('the planner, one row per path of DESIGN.md section 5', () => {
  it.each(rows)('$id (step $step) $name', ({ facts, want }) => {
    const planned = planStep(facts());
    if ('read' in want) {
      expect(planned).toMatchObject({ kind: 'read', read: want.read });
      return;
    }
    if (planned.kind !== 'plan') throw new Error(`expected a plan, got a read of ${planned.read}`);
    expect([planned.move.kind, planned.outcome.reason]).toEqual([want.move, want.reason]);
    if (want.waitReason !== undefined) {
      const status = planned.move.kind === 'start' ? planned.move.start.status : planned.status;
      const written = planned.move.kind === 'watch' ? (planned.move.status ?? status) : status;
      expect(written?.waitReason).toBe(want.waitReason);
    }
    want.check?.(planned);
    // Plain data (issue 22): a function anywhere in the plan makes structuredClone throw.
    expect(structuredClone(planned)).toEqual(planned);
  });
});

/** The wait a start's guards impose at perform time (steps 6 and 8), from the planned start's data. */
const held: { id: string; name: string; wait: HeldWait; waitsFor: unknown[] | undefined; job?: string }[] = [
  {
    id: 'H1',
    name: '6: the run lease is held: woken by its release',
    wait: { reason: 'WaitingForRunLease', message: 'held by another run' },
    waitsFor: [expect.objectContaining({ kind: 'RunLeases' })],
  },
  {
    id: 'H2',
    name: '6: a cluster operation runs: woken by the lease group',
    wait: { reason: 'WaitingForClusterOperation', message: 'the cluster applies' },
    waitsFor: [expect.objectContaining({ kind: 'RunLeases' })],
  },
  {
    id: 'H3',
    name: '6: every Job slot is taken: woken by a slot of the set found full',
    wait: { reason: 'WaitingForJobSlot', message: 'slots', slotScope: 'installation' },
    waitsFor: [expect.objectContaining({ kind: 'JobSlots' })],
  },
  {
    id: 'H4',
    name: "8: another's running Job holds the name",
    wait: { reason: 'WaitingForForeignJob', message: 'runs' },
    waitsFor: undefined,
    job: 'start',
  },
];

describe('a start held back at perform time (heldOutcome)', () => {
  it.each(held)('$id $name', ({ wait, waitsFor, job }) => {
    const snap = snapshot();
    const planned = planStep(planFacts(snap));
    if (planned.kind !== 'plan' || planned.move.kind !== 'start') throw new Error('expected a start');
    const start = planned.move.start;
    expect(structuredClone(start)).toEqual(start);
    const answer = heldOutcome(start, wait, snap);
    expect(answer.status?.waitReason).toBe(wait.reason);
    expect(answer.status?.activeJob).toBeUndefined();
    expect(answer.outcome).toMatchObject({ action: 'waiting', reason: wait.reason });
    expect(answer.outcome.waitsFor).toEqual(waitsFor);
    expect(answer.outcome.job).toBe(job === 'start' ? start.name : undefined);
  });
});
