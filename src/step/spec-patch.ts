import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { type KubeConfigSource, loadKubeConfig, makeKubeApis } from '../adapters/kube/connection.ts';
import { type CustomObject, parseCustomObject } from '../adapters/kube/custom-object.ts';
import { toKubeError } from '../adapters/kube/errors.ts';
import type { RequestCounter } from '../adapters/kube/request-count.ts';
import { CUSTOM_RESOURCES } from '../adapters/kube/resources.ts';
import type { VersionedRef } from '../adapters/kube/writer.ts';
import type { ObjectKind } from './contract.ts';

/**
 * Writes the Cluster API contract fields that live in `spec` (DESIGN.md section 2: TerraformCluster
 * `spec.controlPlaneEndpoint`, TerraformMachine `spec.providerID`, pool `spec.providerIDList`). The Kubernetes
 * adapter's writer patches metadata only, so this one merge patch of the main resource lives here, built on
 * the adapter's own connection and error normalisation.
 */
export interface SpecWriter {
  /** Merge-patches `spec` under a resourceVersion precondition; throws a KubeError (Conflict when stale). */
  patchSpec(kind: ObjectKind, target: VersionedRef, spec: Record<string, unknown>): Promise<CustomObject>;
}

/** Builds the writer; `counter` should be the adapter's, so its requests count with the step's. */
export function createSpecWriter(
  source: KubeConfigSource,
  options: { requestTimeoutMs: number; counter: RequestCounter },
): SpecWriter {
  const apis = makeKubeApis(loadKubeConfig(source), options);
  return {
    async patchSpec(kind, target, spec) {
      const action = `patch ${kind} ${target.namespace}/${target.name} spec`;
      try {
        const written: unknown = await apis.custom.patchNamespacedCustomObject(
          {
            ...CUSTOM_RESOURCES[kind],
            namespace: target.namespace,
            name: target.name,
            body: { metadata: { resourceVersion: target.resourceVersion }, spec },
            fieldManager: 'captf',
          },
          setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
        );
        return parseCustomObject(written, action);
      } catch (error) {
        throw toKubeError(error, action);
      }
    },
  };
}
