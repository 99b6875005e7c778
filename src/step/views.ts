import type { V1Container, V1Job, V1Pod } from '@kubernetes/client-node';
import type { ContainerManifest, JobManifest } from '../core/job-manifest.ts';
import type { JobView, PodView } from '../core/views.ts';

/**
 * Conversions between client-node's models and the core's shapes. Views: client-node's models as the core's views (src/core/views.ts): the same JSON, except that the models make
 * `metadata` and `metadata.name` optional, which the API server always sends.
 */

export function asJobView(job: V1Job): JobView {
  return { ...job, metadata: { ...job.metadata, name: job.metadata?.name ?? '' } } as JobView;
}

export function asPodView(pod: V1Pod): PodView {
  return { ...pod, metadata: { ...pod.metadata, name: pod.metadata?.name ?? '' } } as PodView;
}

function quantities(values: Record<string, string | number>): Record<string, string> {
  return Object.fromEntries(Object.entries(values).map(([key, value]) => [key, String(value)]));
}

function container(manifest: ContainerManifest): V1Container {
  const { resources, ...rest } = manifest;
  return {
    ...rest,
    ...(resources
      ? { resources: { requests: quantities(resources.requests), limits: quantities(resources.limits) } }
      : {}),
  };
}

/**
 * The core's Job manifest as client-node's model (quantities as strings, as the API returns them), with
 * `annotations` added to the Job's own metadata.
 */
export function toV1Job(manifest: JobManifest, annotations: Record<string, string>): V1Job {
  const pod = manifest.spec.template.spec;
  return {
    ...manifest,
    metadata: { ...manifest.metadata, annotations: { ...manifest.metadata.annotations, ...annotations } },
    spec: {
      ...manifest.spec,
      template: {
        ...manifest.spec.template,
        spec: {
          ...pod,
          initContainers: pod.initContainers.map(container),
          containers: pod.containers.map(container),
        },
      },
    },
  };
}
