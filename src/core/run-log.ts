import { ANNOTATIONS, LABELS } from './job-labels.ts';
import type { OwnerReference } from './job-manifest.ts';

/**
 * The run log Secret `captf-log-<job>` (DESIGN.md sections 7 and 9): the redacted output of every step of
 * one run, its last RUN_LOG_MAX_BYTES, kept after the Job and its pod are gone. The runner writes it itself
 * just before it exits, as the run's own identity, so it costs the controller nothing; admission holds that
 * identity to exactly its own Job's log (infra/admission/runner-secret-writes-policy.yaml). It is owned by
 * the object, not the Job, so it outlives the Job and goes with the object; pruning deletes it with its Job.
 */

/** The Secret `type` of a run log: tells it apart from the Opaque Secrets users keep. */
export const RUN_LOG_SECRET_TYPE = 'captf.io/run-log';

/** The data key of the log text (UTF-8). */
export const RUN_LOG_KEY = 'log';

/**
 * 64 KiB: the tail a failure is read from. A Secret's data may reach 1 MiB, but every run keeps one in etcd
 * for as long as the history keeps the run, so the bound is what a run costs at most.
 */
export const RUN_LOG_MAX_BYTES = 64 * 1024;

export const RUN_LOG_ANNOTATIONS = {
  /** How many leading bytes of the redacted log were dropped to keep the tail; `0` when none. */
  truncatedBytes: 'captf.io/log-truncated-bytes',
  /** `"true"` when the runner wrote it as it exited; `"false"` when it holds less than the whole run. */
  complete: 'captf.io/log-complete',
  /**
   * `pod-log` on a log the controller kept from the pod's own log because the runner was killed before it
   * wrote one (DESIGN.md section 7); absent on the runner's.
   */
  source: 'captf.io/log-source',
} as const;

/** `captf-log-<job>`: at most 67 characters, as Job names are at most 57 (src/core/names.ts). */
export function runLogSecretName(job: string): string {
  return `captf-log-${job}`;
}

/** Where the runner writes the log and what it is labelled and owned with (the run config's `runLog`). */
export interface RunLogTarget {
  namespace: string;
  name: string;
  labels: Record<string, string>;
  ownerReferences: OwnerReference[];
}

/**
 * The target of the run of `job`: the Job's labels (ownerLabels, op, attempt) plus `captf.io/job` and
 * `captf.io/run-log`, owned by the Job's owner (the object), not blocking its deletion. Undefined when the
 * Job has no owner reference to carry over (never for a Job the controller built).
 */
export function runLogTarget(job: {
  name: string;
  namespace: string;
  labels: Record<string, string>;
  ownerReferences: readonly OwnerReference[];
}): RunLogTarget | undefined {
  const owner = job.ownerReferences.find((ref) => ref.controller);
  if (owner === undefined) return undefined;
  return {
    namespace: job.namespace,
    name: runLogSecretName(job.name),
    labels: { ...job.labels, [LABELS.job]: job.name, [LABELS.runLog]: 'true' },
    // Not blocking: the runner could not set it (it holds no update on the object's finalizers), and the
    // object's deletion need not wait for its logs.
    ownerReferences: [{ ...owner, blockOwnerDeletion: false }],
  };
}

/** The last bytes of a text, cut on a character boundary, and how many leading bytes were dropped. */
export interface Tail {
  text: string;
  droppedBytes: number;
}

/**
 * The last `maxBytes` bytes of `text` in UTF-8, moved forward to the next character start so no character
 * is split (the tail may be up to 3 bytes shorter than `maxBytes`); `droppedBytes` counts every byte cut.
 */
export function tailUtf8(text: string, maxBytes: number): Tail {
  const bytes = new TextEncoder().encode(text);
  if (bytes.length <= maxBytes) return { text, droppedBytes: 0 };
  let start = bytes.length - maxBytes;
  // 0b10xxxxxx is a continuation byte: the character started before the cut.
  while (start < bytes.length && ((bytes[start] ?? 0) & 0xc0) === 0x80) start += 1;
  return { text: new TextDecoder().decode(bytes.subarray(start)), droppedBytes: start };
}

/** core/v1 Secret of a run log, as created. */
export interface RunLogSecretManifest {
  apiVersion: 'v1';
  kind: 'Secret';
  type: typeof RUN_LOG_SECRET_TYPE;
  metadata: RunLogTarget & { annotations: Record<string, string> };
  data: Record<typeof RUN_LOG_KEY, string>;
}

/**
 * The run log Secret of `target` holding the tail of `log.text` (already redacted), at most
 * RUN_LOG_MAX_BYTES; `log.droppedBytes` counts what was dropped before it (a bounded buffer). `complete` is
 * false when the log is known to hold less than the run printed (a reader other than the runner wrote it).
 * `startedAt` (RFC 3339), when the run started, is kept as `captf.io/started-at`.
 */
export function buildRunLogSecret(
  target: RunLogTarget,
  log: Tail,
  complete: boolean,
  startedAt?: string,
): RunLogSecretManifest {
  const tail = tailUtf8(log.text, RUN_LOG_MAX_BYTES);
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    type: RUN_LOG_SECRET_TYPE,
    metadata: {
      ...target,
      annotations: {
        [RUN_LOG_ANNOTATIONS.truncatedBytes]: String(log.droppedBytes + tail.droppedBytes),
        [RUN_LOG_ANNOTATIONS.complete]: String(complete),
        ...(startedAt === undefined ? {} : { [ANNOTATIONS.startedAt]: startedAt }),
      },
    },
    data: { [RUN_LOG_KEY]: Buffer.from(tail.text, 'utf8').toString('base64') },
  };
}
