import { z } from 'zod';

/**
 * The part of `metav1.ObjectMeta` the controller reads. Not part of any CRD schema: the API server owns
 * metadata validation.
 */
export const ObjectMetaSchema = z.object({
  name: z.string(),
  namespace: z.string().optional(),
  uid: z.string().optional(),
  generation: z.number().int().optional(),
  resourceVersion: z.string().optional(),
  creationTimestamp: z.string().optional(),
  deletionTimestamp: z.string().optional(),
  labels: z.record(z.string(), z.string()).optional(),
  annotations: z.record(z.string(), z.string()).optional(),
  finalizers: z.array(z.string()).optional(),
  ownerReferences: z
    .array(
      z.object({
        apiVersion: z.string(),
        kind: z.string(),
        name: z.string(),
        uid: z.string(),
        controller: z.boolean().optional(),
        blockOwnerDeletion: z.boolean().optional(),
      }),
    )
    .optional(),
});
export type ObjectMeta = z.infer<typeof ObjectMetaSchema>;
