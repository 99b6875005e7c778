/**
 * The runner image as the controller's own pod names it: the image of its container (or init container)
 * `container`. The always-on Deployment (infra/deployment/controller.yaml) carries the runner image as an
 * init container, so that clusterctl's `images:` overrides, which rewrite a Deployment's container images
 * and no environment variable, reach the runner image every Job copies the runner from. Pure; the pod is
 * what the API server answers for it (functions/runner-image.ts reads it once, at start).
 */

/** The fields of a Pod this reads. */
export interface PodImages {
  spec?: {
    containers?: readonly { name: string; image?: string }[];
    initContainers?: readonly { name: string; image?: string }[];
  };
}

/** The image of `container` in `pod`; an error naming the pod's containers when none is found. */
export function runnerImageOfPod(
  pod: PodImages,
  container: string,
): { ok: true; image: string } | { ok: false; message: string } {
  const all = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
  const image = all.find((c) => c.name === container)?.image;
  if (image !== undefined && image !== '') return { ok: true, image };
  return {
    ok: false,
    message: `runner image: the pod has no container "${container}" with an image (it has ${all.map((c) => c.name).join(', ') || 'none'})`,
  };
}
