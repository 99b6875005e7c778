import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyObjects, type E2eRun, pinnedJobs, RESOURCE, startE2eRun, waitReady } from './harness.ts';

// The worked example of docs/image-contract.md, examples/module-image/, run as a user's image: the local
// node serves the tree its Dockerfile builds (the module at /captf/module/, OpenTofu at /captf/runtime, as
// image.json links it), and a TerraformMachine of that image goes Ready with the Cluster API fields its
// module outputs, through the real runner and OpenTofu. Its destroy leaves the object to go.

const MINUTE = 60_000;
const examples = join(import.meta.dirname, '..', '..', 'examples');
let run: E2eRun;

beforeAll(async () => {
  run = await startE2eRun('module-image', { imageDirs: [examples] });
}, 2 * MINUTE);

afterAll(async () => {
  await run?.close();
}, MINUTE);

describe('the module image example', () => {
  it(
    'a machine of the example image applies to Ready with its providerID and addresses, and destroys',
    async () => {
      await applyObjects(run, [
        {
          apiVersion: 'infrastructure.cluster.x-k8s.io/v1alpha1',
          kind: 'TerraformMachine',
          metadata: { name: 'example', namespace: run.namespace },
          spec: {
            source: { image: 'captf.local/module-image:1' },
            variables: { machine_name: 'example', size: 'large' },
            jobs: pinnedJobs(run),
          },
        },
      ]);
      const ready = await waitReady(run, RESOURCE.TerraformMachine, 'example', 3 * MINUTE);
      expect(ready.spec.providerID).toMatch(/^example:\/\/[0-9a-f-]{36}$/);
      expect(ready.status?.addresses).toEqual([{ type: 'InternalIP', address: '10.0.0.10' }]);
      await run.kubectl.run(['delete', 'terraformmachine', 'example', '-n', run.namespace, '--timeout=180s']);
    },
    5 * MINUTE,
  );
});
