import type { TargetKind } from '../schemas/kinds/api-group.ts';
import type { TargetStatus } from '../schemas/kinds/target.ts';
import { ANNOTATIONS, KIND_CODES } from './job-labels.ts';
import { hashedName } from './names.ts';
import { type JobView, timestampMs } from './views.ts';

/**
 * The identity an object's Terraform state is named by (DESIGN.md section 2, issue 11): the kubernetes
 * backend's `secret_suffix` (state Secret `tfstate-default-<suffix>`, lock Lease `lock-tfstate-default-<suffix>`)
 * and the plan key Secret `captf-plan-key-<suffix>`. It is `<c|m|mp>-<name>`: kind and name within the
 * namespace are what `clusterctl move` and a restore from a backup keep, while the UID is new each time an
 * object is re-created, so a UID-named state would be lost and the infrastructure built twice.
 *
 * Objects whose state was first written under their UID (releases before this rule) keep it: the suffix a
 * run used is recorded in `status.stateSuffix` when its Job starts (and on the Job, annotation
 * `captf.io/state-suffix`, in case that status write is lost), and an object with runs on record but no
 * recorded suffix anywhere is one of those.
 */

/** Longest suffix: the kubernetes backend copies it into the label `tfstateSecretSuffix` (63 at most). */
export const MAX_STATE_SUFFIX_LENGTH = 63;

/**
 * `<c|m|mp>-<name>`, or `<c|m|mp>--<first 16 hex of SHA-256(name)>` ({@link hashedName}) when that would
 * not fit the label. No two objects share one: a name cannot start with `-`, so no plain suffix starts
 * `<code>--`. Objects that recorded the older hashed form `<code>-<16 hex>` keep it (`status.stateSuffix`).
 */
export function nameStateSuffix(kind: TargetKind, name: string): string {
  const full = `${KIND_CODES[kind]}-${name}`;
  if (full.length <= MAX_STATE_SUFFIX_LENGTH) return full;
  return `${KIND_CODES[kind]}-${hashedName(name)}`;
}

/** What {@link ranBeforeSuffixWasRecorded} reads. */
type RunsOnRecord = Pick<TargetStatus, 'lastRun' | 'lastSuccess' | 'appliedGeneration' | 'activeJob'>;

/** Whether the status shows runs from before `status.stateSuffix` was recorded. */
function ranBeforeSuffixWasRecorded(status: RunsOnRecord): boolean {
  return (
    status.lastRun !== undefined ||
    status.lastSuccess !== undefined ||
    status.appliedGeneration !== undefined ||
    status.activeJob !== undefined
  );
}

/**
 * The state suffix of the object's runs: the one its status records; else the one a Job of it carries
 * (`jobSuffixes`, from the annotation); the UID for an object that ran before suffixes were recorded;
 * otherwise {@link nameStateSuffix}.
 */
export function stateSuffixOf(object: {
  kind: TargetKind;
  name: string;
  uid: string;
  status: TargetStatus;
  jobSuffixes?: readonly string[];
}): string {
  if (object.status.stateSuffix !== undefined) return object.status.stateSuffix;
  const [fromJob] = object.jobSuffixes ?? [];
  if (fromJob !== undefined) return fromJob;
  if (ranBeforeSuffixWasRecorded(object.status)) return object.uid;
  return nameStateSuffix(object.kind, object.name);
}

/**
 * Whether {@link stateSuffixOf} answers the same whatever the object's Jobs carry, so a step may name the
 * suffix without listing them: the status records it, or records no run at all. A Job of an object whose
 * status shows no run (its start's status write lost) was started from that same status with no Job before
 * it, so it carries {@link nameStateSuffix}, which is what this status gives. Pure.
 */
export function suffixKnownWithoutJobs(status: RunsOnRecord & Pick<TargetStatus, 'stateSuffix'>): boolean {
  return status.stateSuffix !== undefined || !ranBeforeSuffixWasRecorded(status);
}

/**
 * The suffix `status.stateSuffix` should record when it records none yet but a Job of the object carries
 * one (its start's status write was lost); undefined otherwise.
 */
export function unrecordedStateSuffix(
  status: TargetStatus,
  jobSuffixes: readonly string[],
): string | undefined {
  return status.stateSuffix === undefined ? jobSuffixes[0] : undefined;
}

/** The state suffixes the object's Jobs carry (annotation `captf.io/state-suffix`), newest Job first. */
export function jobStateSuffixes(jobs: readonly JobView[]): string[] {
  return [...jobs]
    .sort(
      (a, b) =>
        (timestampMs(b.metadata.creationTimestamp) ?? 0) - (timestampMs(a.metadata.creationTimestamp) ?? 0),
    )
    .flatMap((job) => {
      const suffix = job.metadata.annotations?.[ANNOTATIONS.stateSuffix];
      return suffix ? [suffix] : [];
    });
}

/** The state suffix of a snapshot's object: {@link stateSuffixOf} over its status and its Jobs. */
export function snapshotStateSuffix(snap: {
  ref: { kind: TargetKind; name: string };
  uid: string;
  status: TargetStatus;
  jobs: readonly JobView[];
}): string {
  return stateSuffixOf({
    kind: snap.ref.kind,
    name: snap.ref.name,
    uid: snap.uid,
    status: snap.status,
    jobSuffixes: jobStateSuffixes(snap.jobs),
  });
}
