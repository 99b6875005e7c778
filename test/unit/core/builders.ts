import type { Evidence } from '../../../src/core/classify.ts';
import type { JobRecord } from '../../../src/core/job-record.ts';
import { FINALIZER } from '../../../src/core/preamble.ts';
import type { Snapshot } from '../../../src/core/snapshot.ts';
import type { PlanFacts } from '../../../src/core/step-plan.ts';
import type { JobView, PodView } from '../../../src/core/views.ts';
import { TARGET_SCHEMAS } from '../../../src/schemas/kinds/registry.ts';
import type { Op, RunnerResult } from '../../../src/schemas/result.ts';

/** Builders of the views the core reads, for table tests with a fixed clock. */

/** The fixed clock of every core test. */
export const T0 = new Date('2026-11-29T12:00:00.000Z');

/** `T0 + seconds`. */
export function at(seconds: number): Date {
  return new Date(T0.getTime() + seconds * 1000);
}

/** `T0 + seconds`, as RFC 3339 text. */
export function iso(seconds: number): string {
  return at(seconds).toISOString();
}

let counter = 0;

/** A finished, bookkept Job record of `op` with `outcome`, finished at `T0 + finishedAt` seconds. */
export function record(
  op: Op,
  outcome: Evidence,
  finishedAt: number,
  extra: Partial<JobRecord> = {},
): JobRecord {
  counter += 1;
  return {
    name: `captf-m-m-a-${op}-a${counter}-000000`,
    op,
    attempt: counter,
    inputsHash: 'h1',
    createdAtMs: at(finishedAt - 60).getTime(),
    finished: true,
    finishedAtMs: at(finishedAt).getTime(),
    bookkept: true,
    outcome,
    deleting: false,
    ...extra,
  };
}

/** Attempt 1 of an apply Job, created at T0, finished and not bookkept yet: what bookkeeping records. */
export function toBookkeep(extra: Partial<JobRecord> = {}): JobRecord {
  return {
    name: 'J1',
    op: 'apply',
    attempt: 1,
    inputsHash: 'h1',
    createdAtMs: T0.getTime(),
    finished: true,
    bookkept: false,
    deleting: false,
    ...extra,
  };
}

/** A valid runner result document. */
export function result(fields: Partial<RunnerResult> & Pick<RunnerResult, 'op' | 'result'>): RunnerResult {
  return { version: 1, steps: [], ...fields };
}

/** A Job with the given conditions (`[type, reason]`, status True). */
export function job(
  conditions: [string, string?][],
  extra: { succeeded?: number; completionTime?: string } = {},
): JobView {
  return {
    metadata: { name: 'J1', creationTimestamp: iso(0) },
    spec: { activeDeadlineSeconds: 3600 },
    status: {
      startTime: iso(0),
      conditions: conditions.map(([type, reason]) => ({
        type,
        status: 'True',
        ...(reason ? { reason } : {}),
        lastTransitionTime: iso(400),
      })),
      ...extra,
    },
  };
}

/** How the `source` container of a pod ended (or is stuck). */
export interface SourceState {
  exitCode?: number;
  reason?: string;
  message?: string;
  waiting?: string;
  running?: boolean;
  /** Terminated without ever starting (killed while its image was still being pulled). */
  neverStarted?: boolean;
}

/** A pod named `name`, created `createdAt` seconds after T0, whose `source` container is in `state`. */
export function pod(
  name: string,
  state: SourceState | 'no-status',
  extra: { createdAt?: number; phase?: string; podReason?: string; disrupted?: boolean } = {},
): PodView {
  const containerState =
    state === 'no-status'
      ? undefined
      : state.waiting
        ? { waiting: { reason: state.waiting } }
        : state.running
          ? { running: { startedAt: iso(1) } }
          : {
              terminated: {
                exitCode: state.exitCode ?? 0,
                ...(state.reason ? { reason: state.reason } : {}),
                ...(state.message !== undefined ? { message: state.message } : {}),
                // The kubelet gives a container that never started no start time (ContainerStatusUnknown).
                ...(state.neverStarted ? {} : { startedAt: iso(1) }),
                finishedAt: iso(400),
              },
            };
  return {
    metadata: { name, creationTimestamp: iso(extra.createdAt ?? 0) },
    status: {
      phase: extra.phase ?? 'Failed',
      ...(extra.podReason ? { reason: extra.podReason } : {}),
      ...(extra.disrupted
        ? { conditions: [{ type: 'DisruptionTarget', status: 'True', reason: 'EvictionByEvictionAPI' }] }
        : {}),
      containerStatuses: containerState ? [{ name: 'source', state: containerState }] : [],
    },
  };
}

/** Machine team-a/m-a (uid `uid-1`, resourceVersion 7): the identity the step and budget tests use. */
export const M_A = {
  ref: { kind: 'TerraformMachine', namespace: 'team-a', name: 'm-a' },
  uid: 'uid-1',
  resourceVersion: '7',
} as const satisfies Partial<Snapshot>;

/** A machine's snapshot with our finalizer, a parsed spec and no Jobs; `extra` overrides any field. */
export function snapshot(extra: Partial<Snapshot> = {}): Snapshot {
  return {
    ref: { kind: 'TerraformMachine', namespace: 'default', name: 'web' },
    uid: '5b3c1f0e-6a4d-4a43-9b7e-0c8f2d1e3a44',
    generation: 1,
    resourceVersion: '100',
    meta: { finalizers: [FINALIZER] },
    spec: TARGET_SCHEMAS.TerraformMachine.spec.parse({ source: { image: 'registry.example.com/m:1' } }),
    status: {},
    paused: false,
    jobs: [],
    records: [],
    referencedSecrets: new Map(),
    variablesSecretOptIns: new Map(),
    inputsHash: 'h1',
    ...extra,
  };
}

/**
 * An applied machine at rest: its apply succeeded (inputs `h1`, state suffix `m-web`) and was bookkept a
 * minute before T0; `extra` overrides any field.
 */
export function appliedAtRest(extra: Partial<Snapshot> = {}): Snapshot {
  const applied = record('apply', 'succeeded', -60, { inputsHash: 'h1' });
  return snapshot({
    status: {
      lastSuccess: { apply: iso(-60) },
      appliedInputsHash: 'h1',
      stateSuffix: 'm-web',
      attempts: { apply: { last: applied.attempt, recorded: applied.attempt } },
      lastRun: {
        job: applied.name,
        op: 'apply',
        attempt: applied.attempt,
        generation: 1,
        inputsHash: 'h1',
        startedAt: iso(-120),
        finishedAt: iso(-60),
        result: 'succeeded',
      },
    } as Snapshot['status'],
    records: [applied],
    ...extra,
  });
}

/** What the planner reads besides the snapshot: the clock at T0, the default limits, no pods and no slots used. */
export function planFacts(snap: Snapshot, extra: Partial<PlanFacts> = {}): PlanFacts {
  return {
    snap,
    now: T0,
    config: {
      runnerImage: 'registry.example.com/captf/runner:test',
      maxActiveJobs: 200,
      clusterMaxActiveJobs: 20,
    },
    pods: [],
    slots: { installation: 0, cluster: undefined },
    ...extra,
  };
}
