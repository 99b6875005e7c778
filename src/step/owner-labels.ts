import { LABELS } from '../core/job-labels.ts';
import type { Snapshot } from './snapshot.ts';

/**
 * Labels that tie something the step creates (a TerraformPlan) to its object, so events about it map back
 * to the object without a read (DESIGN.md section 13).
 */
export function jobOwnerLabels(snap: Snapshot): Record<string, string> {
  return {
    [LABELS.managed]: 'true',
    [LABELS.ownerKind]: snap.ref.kind,
    [LABELS.ownerName]: snap.ref.name,
    [LABELS.ownerUid]: snap.uid,
    ...(snap.clusterName !== undefined ? { [LABELS.clusterName]: snap.clusterName } : {}),
  };
}
