import { OUR_API_VERSION } from '../adapters/kube/resources.ts';
import type { EventObjectRef } from '../adapters/kube/writer.ts';
import type { EffectiveJobsPolicy } from '../schemas/kinds/jobs-policy.ts';
import type { StepDeps } from './deps.ts';
import type { Redactor } from './redact.ts';
import type { Snapshot, TargetStatus } from './snapshot.ts';

/**
 * What every part of one step shares: the dependencies, the snapshot, the one `now` of the step, the
 * redactor for its texts, the merged Job policy, and the object's current resourceVersion and status
 * (each write of the object moves them on, and the next write must start from them).
 */
export interface StepContext {
  deps: StepDeps;
  snap: Snapshot;
  now: Date;
  redact: Redactor;
  policy: EffectiveJobsPolicy;
  /** The object's resourceVersion after the step's own writes so far. */
  resourceVersion: string;
  /** The object's status as stored after the step's own writes so far (the snapshot's at first): the base
   * every status write is diffed against. */
  status: TargetStatus;
  /** The status the step builds on: `status` plus changes decided but not yet written (a superseded
   * plan reference dropped). */
  draft: TargetStatus;
  /** The object as Events refer to it. */
  regarding: EventObjectRef;
}

/** The object as Events name it (`regarding`). */
export function regardingOf(snap: Snapshot): EventObjectRef {
  return {
    apiVersion: OUR_API_VERSION,
    kind: snap.ref.kind,
    namespace: snap.ref.namespace,
    name: snap.ref.name,
    uid: snap.uid,
  };
}
