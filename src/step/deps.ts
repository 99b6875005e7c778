import type { Clock } from '../adapters/clock.ts';
import type { KubeReader } from '../adapters/kube/reader.ts';
import type { KubeWriter } from '../adapters/kube/writer.ts';
import type { RedisAdapter } from '../adapters/redis/adapter.ts';
import type { PlannerConfig } from '../core/step-plan.ts';
import type { Failpoints } from './failpoints.ts';
import type { StepMetrics } from './step-metrics.ts';

/**
 * Everything a reconcile step needs, injected (STYLE.md habit 7): the API server (reader and writer apart,
 * so a dry run provably writes nothing), Redis, the clock, the configuration, the failpoints and the metrics.
 */

/**
 * The Redis operations the step uses; without `clusterFacts`, a member reads its cluster live every step;
 * without `markOwnWrite`, the echo of a write the step made before its end starts a step of its own.
 */
export type StepRedis = Pick<
  RedisAdapter,
  'takeStepLock' | 'extendStepLock' | 'releaseStepLock' | 'runLeases' | 'jobSlots' | 'identityChecks'
> &
  Partial<Pick<RedisAdapter, 'clusterFacts' | 'markOwnWrite'>>;

/** The step's configuration, read once by the composition root (src/config.ts) and passed in. */
export type StepConfig = PlannerConfig;

export interface StepDeps {
  kube: { reader: KubeReader; writer: KubeWriter };
  redis: StepRedis;
  clock: Clock;
  config: StepConfig;
  /** `NO_FAILPOINTS` in production; tests arm some (src/step/failpoints.ts). */
  failpoints: Failpoints;
  /** DESIGN.md section 14 figures, once per transition (src/step/step-metrics.ts); `NO_STEP_METRICS` in tests. */
  metrics: StepMetrics;
}
