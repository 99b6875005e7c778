import { hasStartTime } from './classify.ts';
import { ANNOTATIONS } from './job-labels.ts';
import { podsOfJob } from './pods.ts';
import type { Redactor } from './redaction.ts';
import {
  buildRunLogSecret,
  RUN_LOG_ANNOTATIONS,
  RUN_LOG_MAX_BYTES,
  type RunLogSecretManifest,
  runLogTarget,
} from './run-log.ts';
import { type ContainerStatusView, type JobView, type PodView, timestampMs } from './views.ts';

/**
 * The run log of a killed runner (DESIGN.md section 7): a runner killed before it exits (OOM, a deadline past
 * its grace, node loss) never writes its `captf-log-<job>`. When bookkeeping finds such a run, the controller
 * reads the `source` container's log once, while the result finalizer still keeps the pod, and keeps its
 * redacted tail in the same Secret, marked as taken from the pod's log. Only then: a run with a readable
 * result had a runner that reached its exit path, which writes the log itself.
 */

/** The `captf.io/log-source` value of a log the controller kept from the pod. */
export const POD_LOG_SOURCE = 'pod-log';

/** Lines asked for: the tail is cut to RUN_LOG_MAX_BYTES after redaction, so ask for more than fits. */
export const POD_LOG_TAIL_LINES = 4096;

/** Bytes asked for at most (the API server's `limitBytes`): four times what is kept, for the redaction. */
export const POD_LOG_LIMIT_BYTES = 4 * RUN_LOG_MAX_BYTES;

/** Which pod's log to read, and where to keep it. */
export interface PodLogFallback {
  pod: string;
  container: 'source';
  tailLines: number;
  limitBytes: number;
  /** The run's classified finish (RFC 3339), kept as `captf.io/finished-at`. */
  finishedAt: string;
  /** When the `source` container started (RFC 3339), kept as `captf.io/started-at`; absent when unknown. */
  startedAt?: string;
  job: { name: string; namespace: string; labels: Record<string, string>; ownerReferences: OwnerRef[] };
}

type OwnerRef = Parameters<typeof runLogTarget>[0]['ownerReferences'][number];

/** What bookkeeping knows of one finished run, as far as this rule reads it. */
export interface KilledRunInput {
  job: JobView;
  /** The object's pods; the run's own are those the Job controls. */
  pods: readonly PodView[];
  classification: {
    success: boolean;
    result: string;
    runnerResult?: unknown;
    pod?: string;
    finishedAt: Date;
  };
}

/** The status of the pod's `source` container (the runner), once the kubelet reported it. */
function sourceStatus(pod: PodView): ContainerStatusView | undefined {
  return pod.status?.containerStatuses?.find((c) => c.name === 'source');
}

/** Whether the pod's `source` container ever ran: a log exists only then. */
function sourceRan(pod: PodView): boolean {
  const source = sourceStatus(pod);
  return (
    source?.state?.running !== undefined ||
    hasStartTime(source?.state?.terminated?.startedAt) ||
    hasStartTime(source?.lastState?.terminated?.startedAt)
  );
}

/** When the `source` container first started, as RFC 3339; undefined when the pod does not say. */
function sourceStartedAt(pod: PodView): string | undefined {
  const source = sourceStatus(pod);
  const ms = timestampMs(
    source?.lastState?.terminated?.startedAt ??
      source?.state?.terminated?.startedAt ??
      source?.state?.running?.startedAt,
  );
  return ms === undefined ? undefined : new Date(ms).toISOString();
}

/**
 * The pod log to keep for a failed run whose runner left no result (and so no log), or undefined: a
 * success, a run with a result, a pod gone or whose `source` container never ran, a Job without a
 * controlling owner reference to give the Secret.
 */
export function podLogFallback(input: KilledRunInput): PodLogFallback | undefined {
  const { job, classification } = input;
  if (classification.success || classification.result !== 'failed') return undefined;
  if (classification.runnerResult !== undefined || classification.pod === undefined) return undefined;
  const pod = podsOfJob(job, input.pods).find((p) => p.metadata.name === classification.pod);
  if (pod === undefined || !sourceRan(pod)) return undefined;
  const ownerReferences = (job.metadata.ownerReferences ?? []).flatMap((ref) =>
    ref.controller === true && ref.apiVersion !== undefined
      ? [
          {
            ...ref,
            apiVersion: ref.apiVersion,
            controller: true,
            blockOwnerDeletion: ref.blockOwnerDeletion ?? false,
          },
        ]
      : [],
  );
  if (ownerReferences.length === 0 || job.metadata.namespace === undefined) return undefined;
  const startedAt = sourceStartedAt(pod);
  return {
    pod: pod.metadata.name,
    container: 'source',
    tailLines: POD_LOG_TAIL_LINES,
    limitBytes: POD_LOG_LIMIT_BYTES,
    finishedAt: classification.finishedAt.toISOString(),
    ...(startedAt === undefined ? {} : { startedAt }),
    job: {
      name: job.metadata.name,
      namespace: job.metadata.namespace,
      labels: job.metadata.labels ?? {},
      ownerReferences,
    },
  };
}

/**
 * The run log Secret of `fallback` from the pod log text read (pure). A read cut at `limitBytes` ends with
 * the last whole line: a secret value cut in two would not be recognised by the redactor. Redacted with the
 * step's redactor (the values the run was fed), then cut to its last RUN_LOG_MAX_BYTES; marked incomplete
 * (the runner's own last lines are missing) and as taken from the pod's log. Undefined without an owner.
 */
export function podLogSecret(
  fallback: PodLogFallback,
  text: string,
  redactor: Redactor,
): RunLogSecretManifest | undefined {
  const target = runLogTarget(fallback.job);
  if (target === undefined) return undefined;
  const cut = Buffer.byteLength(text, 'utf8') >= fallback.limitBytes;
  const whole = cut ? text.slice(0, text.lastIndexOf('\n') + 1) : text;
  const secret = buildRunLogSecret(
    target,
    { text: redactor.redact(whole), droppedBytes: 0 },
    false,
    fallback.startedAt,
  );
  secret.metadata.annotations[RUN_LOG_ANNOTATIONS.source] = POD_LOG_SOURCE;
  secret.metadata.annotations[ANNOTATIONS.finishedAt] = fallback.finishedAt;
  return secret;
}
