import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withRunnerImageFromPod } from '../../../functions/runner-image.ts';
import { type Kubectl, kubectlFor } from '../../../src/local/kubectl.ts';
import { testStack } from '../../env/index.ts';

// The always-on Deployment's handlers take the runner image from their own pod's init container
// (functions/runner-image.ts) with one read of the pod from the real API server. The pod here is bound to
// a node that does not exist, so nothing runs it; only its spec is read.

const POD = `captf-runner-image-${randomBytes(3).toString('hex')}`;
const NAMESPACE = 'default';
let kubectl: Kubectl;

beforeAll(async () => {
  kubectl = kubectlFor(testStack().kubectlPath, testStack().kubeconfigPath);
  await kubectl.run(
    ['apply', '-f', '-'],
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: POD, namespace: NAMESPACE },
      spec: {
        nodeName: 'captf-no-such-node',
        initContainers: [
          { name: 'runner', image: 'registry.test/mirror/captf-runner:1', args: ['copy', '/b'] },
        ],
        containers: [{ name: 'manager', image: 'registry.test/mirror/captf-controller:1' }],
      },
    }),
  );
});

afterAll(async () => {
  await kubectl?.run(['delete', 'pod', POD, '-n', NAMESPACE, '--ignore-not-found', '--wait=false']);
});

describe('the runner image from the controller’s own pod', () => {
  it('is read from the API server: the named init container’s image becomes CAPTF_RUNNER_IMAGE', async () => {
    const env = await withRunnerImageFromPod({
      KUBECONFIG: testStack().kubeconfigPath,
      CAPTF_RUNNER_IMAGE_CONTAINER: 'runner',
      POD_NAMESPACE: NAMESPACE,
      HOSTNAME: POD,
    });
    expect(env.CAPTF_RUNNER_IMAGE).toBe('registry.test/mirror/captf-runner:1');
  });

  it('refuses to start when the pod cannot be read or has no such container', async () => {
    const env = { KUBECONFIG: testStack().kubeconfigPath, POD_NAMESPACE: NAMESPACE };
    await expect(
      withRunnerImageFromPod({ ...env, CAPTF_RUNNER_IMAGE_CONTAINER: 'runner', HOSTNAME: `${POD}-gone` }),
    ).rejects.toThrow(`read pod ${NAMESPACE}/${POD}-gone`);
    await expect(
      withRunnerImageFromPod({ ...env, CAPTF_RUNNER_IMAGE_CONTAINER: 'runnr', HOSTNAME: POD }),
    ).rejects.toThrow('no container "runnr"');
  });
});
