import type { Op } from '../schemas/result.ts';

/**
 * Job slots (DESIGN.md section 5 step 5): `--max-active-jobs` per installation and
 * `--cluster-max-active-jobs` per Cluster API cluster, and the share of them each op may use: drift and
 * refresh start only below 80 % of a limit, so applies and destroys always find a slot.
 */

/** `--max-active-jobs` default: Jobs per installation (DESIGN.md section 5); src/config.ts reads it. */
export const DEFAULT_MAX_ACTIVE_JOBS = 200;
/** `--cluster-max-active-jobs` default: Jobs per Cluster API cluster (DESIGN.md section 5). */
export const DEFAULT_CLUSTER_MAX_ACTIVE_JOBS = 20;
/** Drift and refresh start only below this share of a limit. */
export const BACKGROUND_SLOT_SHARE = 0.8;

/** Ops that may use every slot; the others are background work (section 5, step 5). */
const FOREGROUND_OPS: Readonly<Record<Op, boolean>> = {
  apply: true,
  destroy: true,
  drift: false,
  refresh: false,
};

/** Installation-wide and per-cluster Job slots in use and their limits. */
export interface SlotUsage {
  installationActive: number;
  installationLimit: number;
  clusterActive: number;
  clusterLimit: number;
}

/** The configured limits. */
export interface SlotLimits {
  /** `--max-active-jobs`. */
  maxActiveJobs: number;
  /** `--cluster-max-active-jobs`. */
  clusterMaxActiveJobs: number;
}

/** The share of each limit `op` may fill: 1 for apply and destroy, 0.8 for drift and refresh. */
export function slotShare(op: Op): number {
  return FOREGROUND_OPS[op] ? 1 : BACKGROUND_SLOT_SHARE;
}

/** The slots `op` may fill at most, per installation and per cluster (at least one each). */
export function slotLimitsFor(op: Op, limits: SlotLimits): { installation: number; cluster: number } {
  const share = slotShare(op);
  return {
    installation: Math.max(1, Math.floor(limits.maxActiveJobs * share)),
    cluster: Math.max(1, Math.floor(limits.clusterMaxActiveJobs * share)),
  };
}

/** A set of Job slots: the installation's or one Cluster API cluster's. */
export type SlotScope = 'installation' | 'cluster';

/**
 * The slot sets `op` finds full (at or above its share of the limit): what holds a start back, so what a
 * waiting start registers under (src/core/wake.ts). Empty when `op` may take a slot.
 */
export function fullSlotScopes(op: Op, slots: SlotUsage): SlotScope[] {
  const share = slotShare(op);
  return [
    ...(slots.installationActive >= slots.installationLimit * share ? (['installation'] as const) : []),
    ...(slots.clusterActive >= slots.clusterLimit * share ? (['cluster'] as const) : []),
  ];
}

/** True when `op` may take a slot: below the limit, and below 80 % of it for drift and refresh. */
export function hasJobSlot(op: Op, slots: SlotUsage): boolean {
  return fullSlotScopes(op, slots).length === 0;
}
