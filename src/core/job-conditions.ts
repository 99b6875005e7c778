import type { JobConditionView, JobView } from './views.ts';

/**
 * What the Job controller's conditions say about a Job (batch/v1): whether it is over, and whether it was
 * killed at its deadline. Bookkeeping (DESIGN.md section 7) and the decision core read them only here.
 */

/**
 * The condition that ends a Job: `Complete` or `Failed` with status True; undefined while it runs (a Job is
 * over only when the Job controller says so).
 */
export function finishedCondition(job: JobView): JobConditionView | undefined {
  return job.status?.conditions?.find(
    (c) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True',
  );
}

/**
 * The Job controller killed the Job at `activeDeadlineSeconds`: `Failed` (or, while the pods are still
 * terminating, `FailureTarget`) with reason `DeadlineExceeded`.
 */
export function jobDeadlineExceeded(job: JobView): boolean {
  return (
    job.status?.conditions?.some(
      (c) =>
        (c.type === 'Failed' || c.type === 'FailureTarget') &&
        c.status === 'True' &&
        c.reason === 'DeadlineExceeded',
    ) ?? false
  );
}
