/**
 * The kubelet's image pull back-off, as timings. After a failed pull the container shows
 * `ErrImagePull` until the pod worker's next sync, then `ImagePullBackOff` until the back-off expires,
 * then the kubelet pulls again (C09: `ErrImagePull` at t=3, `ImagePullBackOff` at t=15, alternating). Pure.
 */

/** Timings of the pull retry loop, in milliseconds. */
export interface PullBackoffConfig {
  /** First back-off after a failed pull (kubelet: 10 s). */
  initialBackoffMs: number;
  /** Cap of the doubling back-off (kubelet: `MaxContainerBackOff`, 300 s). */
  maxBackoffMs: number;
  /** How long `ErrImagePull` shows before the next sync turns it into `ImagePullBackOff`. */
  errImagePullMs: number;
}

/** The kubelet's own values. */
export const kubeletPullBackoff: PullBackoffConfig = {
  initialBackoffMs: 10_000,
  maxBackoffMs: 300_000,
  errImagePullMs: 10_000,
};

/** What to show, and for how long, after the `failures`-th failed pull in a row (1-based). */
export interface PullRetryStep {
  /** Milliseconds to show `ErrImagePull`. */
  errImagePullMs: number;
  /** Milliseconds to show `ImagePullBackOff` afterwards, before the next pull. */
  backOffMs: number;
}

/**
 * The back-off doubles from `initialBackoffMs` per failure up to `maxBackoffMs`; `ErrImagePull` takes the
 * first part of it (never all of it, so `ImagePullBackOff` always shows).
 */
export function pullRetryStep(failures: number, config: PullBackoffConfig): PullRetryStep {
  const exponent = Math.max(0, Math.min(failures - 1, 30));
  const totalMs = Math.min(config.initialBackoffMs * 2 ** exponent, config.maxBackoffMs);
  const errImagePullMs = Math.min(config.errImagePullMs, Math.floor(totalMs / 2));
  return { errImagePullMs, backOffMs: totalMs - errImagePullMs };
}
