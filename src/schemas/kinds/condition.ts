import { z } from 'zod';

/** `metav1.Condition` (DESIGN.md section 2: conditions in the standard shape). */
export const ConditionSchema = z.object({
  type: z
    .string()
    .min(1)
    .max(316)
    .describe('Condition type: Ready, ApplyJobSucceeded, DriftJobSucceeded or DriftDetected.'),
  status: z.enum(['True', 'False', 'Unknown']),
  observedGeneration: z.number().int().min(0).optional(),
  lastTransitionTime: z.iso.datetime().describe('When status last changed.'),
  reason: z
    .string()
    .min(1)
    .max(1024)
    .regex(/^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/)
    .describe('CamelCase reason, e.g. ApplySucceeded, JobDeadlineExceeded, WaitingForJobSlot.'),
  message: z.string().max(32_768).describe('A sentence for people; never secret data.'),
});
export type Condition = z.infer<typeof ConditionSchema>;
export type ConditionStatus = Condition['status'];

/** Conditions listed by type, as Kubernetes merges them (`listType: map`). */
export const ConditionsSchema = z
  .array(ConditionSchema)
  .max(16)
  .meta({ 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'] });
