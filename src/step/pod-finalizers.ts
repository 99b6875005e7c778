import { POD_RESULT_FINALIZER } from '../core/job-labels.ts';
import type { JobRecord } from '../core/job-record.ts';
import { podsToRelease, type ReleaseJobView } from '../core/pod-release.ts';
import type { StepContext } from './context.ts';

/**
 * Releasing our pod finalizer (`captf.io/result`) in the step (DESIGN.md section 7: never a lost result):
 * after bookkeeping read and marked a Job, its deleted pods may go; a pruned Job's pods go with it (C13);
 * pods of Jobs that are gone go too (C14). The rule is src/core/pod-release.ts; this is its shell.
 */

/** The object's Jobs as the release rule reads them, with the marks this step wrote (`records`). */
function releaseJobs(context: StepContext, records: readonly JobRecord[]): ReleaseJobView[] {
  return context.snap.jobs.flatMap((job) => {
    const uid = job.metadata?.uid;
    if (uid === undefined) return [];
    const record = records.find((r) => r.name === job.metadata?.name);
    return [
      {
        uid,
        bookkept: record?.bookkept ?? false,
        finished: record?.finished ?? false,
        deleting: job.metadata?.deletionTimestamp !== undefined,
      },
    ];
  });
}

/**
 * Releases the finalizer of every pod of the object that no bookkeeping will read again. `records` are the
 * object's Jobs as they stand after this step's bookkeeping; `pruned` the Jobs this step just deleted (pruned,
 * or recorded and deleted for their deadline), whose pods the garbage collector deletes next.
 * Reads the pods only on a step that bookkept or pruned a Job (bookkeeping has read them already, so that
 * costs no request); a no-op step stays at its two reads, and the sweep catches the rest. Returns the names
 * of the pods released. Throws a KubeError on an outage (the next step or the sweep repeats it).
 */
export async function releasePodFinalizers(
  context: StepContext,
  records: readonly JobRecord[],
  pruned: readonly string[] = [],
): Promise<string[]> {
  const { snap, deps } = context;
  const bookkeptNow = records.some(
    (record) => record.bookkept && !snap.records.some((r) => r.name === record.name && r.bookkept),
  );
  if (!bookkeptNow && pruned.length === 0) return [];
  const pruning = snap.jobs.flatMap((job) =>
    job.metadata?.uid !== undefined && pruned.includes(job.metadata.name ?? '') ? [job.metadata.uid] : [],
  );
  const released = podsToRelease({
    pods: await snap.pods(),
    jobs: releaseJobs(context, records),
    pruning,
  });
  const names: string[] = [];
  for (const { pod } of released) {
    const name = pod.metadata?.name ?? '';
    await deps.kube.writer.removePodFinalizer(snap.ref.namespace, name, POD_RESULT_FINALIZER);
    names.push(name);
  }
  return names;
}
