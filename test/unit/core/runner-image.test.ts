import { describe, expect, it } from 'vitest';
import { withRunnerImageFromPod } from '../../../functions/runner-image.ts';
import { runnerImageOfPod } from '../../../src/core/runner-image.ts';

describe('the runner image from the controller’s pod', () => {
  const pod = {
    spec: {
      initContainers: [{ name: 'runner', image: 'registry.test/mirror/captf-runner:1' }],
      containers: [{ name: 'manager', image: 'registry.test/mirror/captf-controller:1' }],
    },
  };

  it('is the image of the named container, init containers included', () => {
    expect(runnerImageOfPod(pod, 'runner')).toEqual({
      ok: true,
      image: 'registry.test/mirror/captf-runner:1',
    });
    expect(runnerImageOfPod(pod, 'manager')).toEqual({
      ok: true,
      image: 'registry.test/mirror/captf-controller:1',
    });
  });

  it('is an error naming the pod’s containers when there is no such container', () => {
    expect(runnerImageOfPod(pod, 'runnr')).toEqual({
      ok: false,
      message: 'runner image: the pod has no container "runnr" with an image (it has runner, manager)',
    });
    expect(runnerImageOfPod({}, 'runner')).toMatchObject({ ok: false });
  });

  it('replaces CAPTF_RUNNER_IMAGE only when CAPTF_RUNNER_IMAGE_CONTAINER is set, reading the pod by namespace and name', async () => {
    const reads: string[] = [];
    const reader = () => async (namespace: string, name: string) => {
      reads.push(`${namespace}/${name}`);
      return pod;
    };
    const plain = { CAPTF_RUNNER_IMAGE: 'r:1' };
    expect(await withRunnerImageFromPod(plain, reader)).toBe(plain);
    expect(reads).toEqual([]);
    const env = { CAPTF_RUNNER_IMAGE_CONTAINER: 'runner', POD_NAMESPACE: 'ns', HOSTNAME: 'p-1' };
    expect((await withRunnerImageFromPod(env, reader)).CAPTF_RUNNER_IMAGE).toBe(
      'registry.test/mirror/captf-runner:1',
    );
    expect(reads).toEqual(['ns/p-1']);
    await expect(
      withRunnerImageFromPod({ ...env, CAPTF_RUNNER_IMAGE_CONTAINER: 'x' }, reader),
    ).rejects.toThrow('no container "x"');
    await expect(withRunnerImageFromPod({ ...env, HOSTNAME: undefined }, reader)).rejects.toThrow('HOSTNAME');
  });
});
