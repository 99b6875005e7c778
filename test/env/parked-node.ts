import { ApiException, type CoreV1Api } from '@kubernetes/client-node';

/**
 * The name of a Node that exists and that no kubelet serves: a pod bound to it stays as the test leaves it
 * (Pending, or Terminating once deleted) for as long as the test needs.
 */
export const PARKED_NODE = 'captf-test-parked';

/**
 * Makes sure the parked Node exists (idempotent; the stack is shared by every test file) and returns its
 * name. A pod bound to a node that does not exist is not a stable fixture: kube-controller-manager's PodGC
 * force-deletes such orphans 40 s after it first sees the node missing, and at its next 20 s pass once it has
 * (pkg/controller/podgc, `gcOrphaned`), so a "live lock holder" on a made-up node vanished mid-test and its
 * lock turned stale. The parked Node is cordoned so the scheduler never places anything on it, and no node
 * lifecycle controller runs on the local stack (src/local/control-plane.ts) to taint or evict it.
 */
export async function parkedNode(core: CoreV1Api): Promise<string> {
  try {
    await core.createNode({
      body: {
        metadata: { name: PARKED_NODE, labels: { 'kubernetes.io/hostname': PARKED_NODE } },
        spec: { unschedulable: true },
      },
    });
  } catch (error) {
    // 409 AlreadyExists: another file made it first.
    if (!(error instanceof ApiException && error.code === 409)) throw error;
  }
  return PARKED_NODE;
}

/**
 * Binds the pod `name` in `namespace` to the parked Node, as the scheduler would: a bound pod counts as
 * running on a node (it is waited for, and a deletion of it stays Terminating until the test ends it).
 */
export async function bindToParkedNode(core: CoreV1Api, namespace: string, name: string): Promise<void> {
  await core.createNamespacedPodBinding({
    namespace,
    name,
    body: { metadata: { name }, target: { kind: 'Node', name: await parkedNode(core) } },
  });
}
