import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { API_VERSION } from '../schemas/kinds/api-group.ts';
import type { Kubectl } from './kubectl.ts';

/**
 * The installation-wide resources of the local run (DESIGN.md section 15): the CRDs and the admission
 * policies, applied with `kubectl apply` (a typed create through the apiextensions client drops schema
 * keys it does not model; kubectl sends the YAML as written).
 */

/** How long the CRDs may take to become Established, seconds. */
const ESTABLISHED_TIMEOUT_SECONDS = 60;

/** How long the run policy may take to be enforced, and how often it is asked. */
const RUN_POLICY_TIMEOUT_MS = 60_000;
const RUN_POLICY_POLL_MS = 500;

/**
 * Applies infra/crds and infra/admission, waits until every CRD is Established and the run policy is
 * enforced. Throws on failure.
 */
export async function applyClusterResources(kubectl: Kubectl, repoRoot: string): Promise<void> {
  await kubectl.run(['apply', '--server-side', '--force-conflicts', '-f', join(repoRoot, 'infra', 'crds')]);
  await kubectl.run([
    'wait',
    '--for=condition=Established',
    `--timeout=${ESTABLISHED_TIMEOUT_SECONDS}s`,
    '-f',
    join(repoRoot, 'infra', 'crds'),
  ]);
  await kubectl.run([
    'apply',
    '--server-side',
    '--force-conflicts',
    '-f',
    join(repoRoot, 'infra', 'admission'),
  ]);
  await waitForRunPolicy(kubectl);
}

/**
 * Where the probe's objects go: a system namespace no workload uses, since the probe policy bounds its
 * namespace while it exists.
 */
const PROBE_NAMESPACE = 'kube-public';

/**
 * infra/admission/run-policy.yaml takes TerraformRunPolicy as its param kind. For a few seconds after that
 * CRD is new, the API server's admission has not discovered it and refuses every write of our kinds
 * ("failed to find resource referenced by paramKind"); before that, the policy may not be loaded at all. So
 * a probe policy must refuse a server-side dry run (admission, nothing stored) by name: then the policy is
 * live and finds its params, and the sample applied next is judged by it, not refused by its setup.
 */
async function waitForRunPolicy(kubectl: Kubectl): Promise<void> {
  // Named per call: local runs that share an API server (the test stack) probe at the same time.
  const probe = `captf-admission-probe-${randomBytes(4).toString('hex')}`;
  const policy = {
    apiVersion: API_VERSION,
    kind: 'TerraformRunPolicy',
    metadata: { name: probe, namespace: PROBE_NAMESPACE },
    spec: { allowedImages: ['captf.invalid/allowed/'] },
  };
  const refused = {
    apiVersion: API_VERSION,
    kind: 'TerraformCluster',
    metadata: { name: probe, namespace: PROBE_NAMESPACE },
    spec: { source: { image: 'captf.invalid/refused:1' } },
  };
  await kubectl.run(['apply', '-f', '-'], JSON.stringify(policy));
  try {
    const deadline = Date.now() + RUN_POLICY_TIMEOUT_MS;
    let answer = 'accepted';
    while (Date.now() < deadline) {
      try {
        await kubectl.run(['create', '--dry-run=server', '-o', 'name', '-f', '-'], JSON.stringify(refused));
      } catch (error) {
        answer = String(error);
        if (answer.includes(`TerraformRunPolicy ${probe} allows`)) return;
      }
      await sleep(RUN_POLICY_POLL_MS);
    }
    throw new Error(`wait for the run policy: not enforced after ${RUN_POLICY_TIMEOUT_MS} ms (${answer})`);
  } finally {
    await kubectl.run(['delete', 'terraformrunpolicy', probe, '-n', PROBE_NAMESPACE, '--ignore-not-found']);
  }
}
