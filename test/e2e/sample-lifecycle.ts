import { execFile } from 'node:child_process';
import { dirname } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { nextCommands } from '../../src/local/try-next.ts';
import { grantPlanApprovers } from '../../src/local/workload-namespace.ts';
import { testStack } from '../env/index.ts';
import {
  conditionOf,
  type E2eRun,
  editState,
  eventReasons,
  eventsOf,
  jobsOf,
  type ObservedObject,
  type ObservedPlan,
  patchObject,
  RESOURCE,
  readObject,
  waitFor,
  waitObject,
  waitReady,
} from './harness.ts';

/**
 * The end-to-end path on the main job's own sample (infra/samples/local/demo.yaml), as a person
 * trying the main job's commands would go: create → Ready, a variable change, a destructive plan approved by
 * its requester, drift found by the scheduled drift check, delete → destroy. Shared by the runs of each
 * event path (test/e2e/local-run.test.ts: the bundled relay; test/e2e/knative.test.ts: Knative's own
 * adapters). The tests run in order on the same objects; the caller has applied the sample with
 * SAMPLE_OVERRIDES. `beforeDelete` adds the caller's own tests on the settled sample, before m-a is deleted.
 */

const MINUTE = 60_000;
const exec = promisify(execFile);

/** Runs the lines of npm start's banner that start with `prefixes`, in bash, as a person pastes them. */
async function pastedBanner(run: E2eRun, prefixes: readonly string[]): Promise<string> {
  const stack = testStack();
  const banner = nextCommands({
    kubectlPath: stack.kubectlPath,
    kubeconfigPath: stack.kubeconfigPath,
    namespace: run.namespace,
    pluginDir: '/nonexistent',
    nodeDir: dirname(process.execPath),
    handlersUrl: run.controller.url,
  }).map((line) => line.trim());
  const lines = prefixes.map((prefix) => {
    const line = banner.find((l) => l.startsWith(prefix));
    if (line === undefined) throw new Error(`the banner has no line starting ${prefix}`);
    return line;
  });
  return (await exec('bash', ['-o', 'pipefail', '-c', lines.join('\n')])).stdout;
}

/**
 * m-a checks drift every minute (the shortest interval the CRD admits) so the drift test, which waits up
 * to three, does not wait the sample's 5 minutes.
 */
export const SAMPLE_OVERRIDES = { 'm-a': { driftCheck: { interval: '1m', action: 'Report' } } };

/** Registers the lifecycle tests under `title` on the run `runOf` returns (set by the caller's beforeAll). */
export function describeSampleLifecycle(
  title: string,
  runOf: () => E2eRun,
  beforeDelete: () => void = () => undefined,
): void {
  describe(title, () => {
    it(
      'create → Ready: the cluster fills spec.controlPlaneEndpoint, each machine spec.providerID and status.addresses',
      async () => {
        const run = runOf();
        const cluster = await waitReady(run, RESOURCE.TerraformCluster, 'demo', 3 * MINUTE);
        const ma = await waitReady(run, RESOURCE.TerraformMachine, 'm-a', 3 * MINUTE);
        const mb = await waitReady(run, RESOURCE.TerraformMachine, 'm-b', 3 * MINUTE);

        expect(cluster.spec.controlPlaneEndpoint).toEqual({ host: '10.20.0.10', port: 6443 });
        // The cluster module's other contract outputs (docs/module-contract.md): its machines' exports, and
        // the failure domains.
        expect(cluster.status?.exports).toEqual({
          cidr: '10.20.0.0/16',
          network_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        });
        expect(cluster.status?.failureDomains).toEqual([
          { name: 'zone-a', controlPlane: true },
          { name: 'zone-b', controlPlane: true },
        ]);
        expect(ma.spec.providerID).toMatch(/^captf-local:\/\/m-a\/[0-9a-f-]{36}$/);
        expect(mb.spec.providerID).toMatch(/^captf-local:\/\/m-b\/[0-9a-f-]{36}$/);
        expect(ma.status?.addresses).toEqual([{ type: 'InternalIP', address: '10.20.0.101' }]);
        expect(mb.status?.addresses).toEqual([{ type: 'InternalIP', address: '10.20.0.102' }]);
        for (const object of [cluster, ma, mb]) {
          expect(object.status?.lastRun).toMatchObject({ op: 'apply', result: 'succeeded', attempt: 1 });
          expect(object.status?.ready).toBe(true);
        }
        expect(await eventReasons(run, 'm-a')).toEqual(
          expect.arrayContaining(['JobCreated', 'JobSucceeded']),
        );
        // The sample cluster's outputs Secret, read as the start banner prints it.
        expect(cluster.status?.outputs).toEqual({
          secretName: 'demo-outputs',
          names: ['controlPlaneEndpoint', 'exports', 'failureDomains'],
        });
        const outputs = await pastedBanner(run, ['export K=', '$K get secret demo-outputs']);
        expect(outputs).toMatch(/^controlPlaneEndpoint: .*"10\.20\.0\.10"/m);
        expect(outputs).toMatch(/^exports: /m);
        // The banner's metrics line: what the controller cost the API server so far, by verb and resource.
        const metrics = await pastedBanner(run, ['curl -s ']);
        expect(metrics).toMatch(
          /^captf_kube_requests_total\{verb="get",resource="terraformmachines"\} [1-9]\d*$/m,
        );
      },
      10 * MINUTE,
    );

    it(
      'a changed variable starts a new apply (InputsChanged) that updates in place',
      async () => {
        const run = runOf();
        const before = await waitReady(run, RESOURCE.TerraformMachine, 'm-b', MINUTE);
        await patchObject(run, RESOURCE.TerraformMachine, 'm-b', { spec: { variables: { size: 'xlarge' } } });

        const after = await waitObject(
          run,
          RESOURCE.TerraformMachine,
          'm-b',
          'm-b applied with the new size',
          (o) =>
            o?.status?.lastRun?.inputsHash !== before.status?.lastRun?.inputsHash &&
            o?.status?.lastRun?.result === 'succeeded' &&
            conditionOf(o, 'Ready')?.status === 'True',
          3 * MINUTE,
        );
        expect(after.status?.lastRun).toMatchObject({ op: 'apply', plan: { add: 0, change: 1, destroy: 0 } });
        // An update in place keeps the server: same provider ID.
        expect(after.spec.providerID).toBe(before.spec.providerID);
        const jobs = await jobsOf(run, 'm-b');
        expect(jobs.filter((job) => job.includes('-apply-'))).toHaveLength(2);
      },
      5 * MINUTE,
    );

    it(
      'C19: a destructive change waits as DestructivePlanBlocked with a TerraformPlan; the requesting user approves it and that exact plan is applied',
      async () => {
        const run = runOf();
        const before = await waitReady(run, RESOURCE.TerraformMachine, 'm-b', MINUTE);
        await patchObject(run, RESOURCE.TerraformMachine, 'm-b', { spec: { variables: { generation: 2 } } });

        const blocked = await waitObject(
          run,
          RESOURCE.TerraformMachine,
          'm-b',
          'm-b blocked on its destructive plan',
          (o) => o?.status?.pendingPlanRef?.name !== undefined && o.status.activeJob === undefined,
          3 * MINUTE,
        );
        // The blocked run is recorded as DestructivePlanBlocked; the object then waits for the approval.
        expect(blocked.status?.lastRun).toMatchObject({
          op: 'apply',
          result: 'blocked',
          reason: 'DestructivePlanBlocked',
          error: { kind: 'blocked' },
        });
        expect(blocked.status?.waitReason).toBe('AwaitingApproval');
        expect(conditionOf(blocked, 'ApplyJobSucceeded')?.status).toBe('Unknown');
        const planName = blocked.status?.pendingPlanRef?.name ?? '';
        const plan = await readObject<ObservedPlan>(run, RESOURCE.TerraformPlan, planName);
        expect(plan?.spec).toMatchObject({ targetRef: { name: 'm-b' }, add: 1, destroy: 1 });
        expect(plan?.spec.digest).toMatch(/\S{16,}/);
        // The readable plan, from the runner's log through the controller (issue 24 item 1): the server
        // is replaced because its generation changed, and the plan says who asked for which generation.
        expect(plan?.spec.changes?.destructive).toContain('terraform_data.server');
        expect(plan?.spec.changes?.resources).toContainEqual(
          expect.objectContaining({
            address: 'terraform_data.server',
            action: 'replace',
            replacePaths: ['triggers_replace'],
          }),
        );
        expect(plan?.spec.changes?.counts).toMatchObject({ replace: 1 });
        expect(plan?.spec.changes?.omittedResources).toBe(0);
        // Made for the generation the variable change wrote (the first apply's providerID wrote one too).
        expect(plan?.spec.requestedBy?.generation).toBeGreaterThan(1);
        expect(JSON.stringify(plan)).not.toContain('#cloud-config');
        expect(await eventReasons(run, 'm-b')).toContain('DestructivePlanBlocked');

        // As the main job does: any authenticated user may approve; the admission policy checks the name.
        await grantPlanApprovers(run.kubectl, run.namespace);
        // bob cannot approve in alice's name (infra/admission/approval-policy.yaml).
        await expect(
          patchObject(
            run,
            RESOURCE.TerraformPlan,
            planName,
            { spec: { approved: true, approvedBy: 'alice' } },
            'bob',
          ),
        ).rejects.toThrow(/approvedBy must be your own user name/);
        await patchObject(
          run,
          RESOURCE.TerraformPlan,
          planName,
          { spec: { approved: true, approvedBy: 'alice' } },
          'alice',
        );

        const applied = await waitObject(
          run,
          RESOURCE.TerraformMachine,
          'm-b',
          'the approved plan applied',
          (o) =>
            o?.status?.lastRun?.result === 'succeeded' &&
            o.status.lastRun.plan?.digest === plan?.spec.digest &&
            conditionOf(o, 'Ready')?.status === 'True',
          3 * MINUTE,
        );
        // Replaced: a new server, so a new provider ID.
        expect(applied.spec.providerID).not.toBe(before.spec.providerID);
        expect(applied.status?.pendingPlanRef).toBeUndefined();
        // Bookkeeping writes the status first and its Events after it (DESIGN.md section 5).
        await waitFor(
          'the PlanApplied Event of m-b',
          () => eventReasons(run, 'm-b'),
          (reasons) => reasons.includes('PlanApplied'),
          MINUTE,
        );
        // Approving is not a change: the next attempt applies the approved plan; no new plan is made.
        expect(applied.status?.lastRun?.attempt).toBe((blocked.status?.lastRun?.attempt ?? 0) + 1);
        // ... and no second apply follows it (C19: an approval starts at most one apply). Watched for 20 s:
        // the redundant start, when it happens, comes with the step that bookkeeps the approved apply.
        const appliedAttempt = applied.status?.lastRun?.attempt ?? 0;
        const laterApplies = async () =>
          (await jobsOf(run, 'm-b')).filter(
            (job) => Number(/-apply-a(\d+)-/.exec(job)?.[1] ?? 0) > appliedAttempt,
          );
        await expect(
          waitFor(
            'an apply Job of m-b after the approved one',
            laterApplies,
            (jobs) => jobs.length > 0,
            20_000,
          ),
        ).rejects.toThrow(/not after 20000 ms/);
        const plans = JSON.parse(
          await run.kubectl.run(['get', 'terraformplans', '-n', run.namespace, '-o', 'json']),
        ) as { items: ObservedPlan[] };
        const plansOfMb = plans.items.filter((p) => p.spec.targetRef.name === 'm-b');
        expect(plansOfMb.map((p) => [p.metadata.name, p.status?.phase])).toEqual([[planName, 'Applied']]);
      },
      8 * MINUTE,
    );

    it(
      'drift made outside (the state no longer matches the module) is found by the scheduled drift check',
      async () => {
        const run = runOf();
        const ready = await waitReady(run, RESOURCE.TerraformMachine, 'm-a', MINUTE);
        expect(conditionOf(ready, 'DriftDetected')?.status).not.toBe('True');
        // Someone resized the server by hand: the recorded size is no longer what the module says.
        // Named by kind and name (src/core/state-identity.ts), never by the UID.
        expect(ready.status?.stateSuffix).toBe('m-m-a');
        await editState(run, ready.status?.stateSuffix ?? '', (state) => {
          const server = state.resources.find((r) => r.type === 'terraform_data' && r.name === 'server');
          const attributes = server?.instances[0]?.attributes;
          if (!attributes) throw new Error('state: no terraform_data.server');
          attributes.input = {
            value: { name: 'm-a', size: 'resized-by-hand' },
            type: ['object', { name: 'string', size: 'string' }],
          };
          attributes.output = attributes.input;
          state.serial += 1;
        });

        const drifted = await waitObject(
          run,
          RESOURCE.TerraformMachine,
          'm-a',
          'the drift check to report drift',
          (o) => conditionOf(o, 'DriftDetected')?.status === 'True',
          3 * MINUTE,
        );
        expect(drifted.status?.lastRun).toMatchObject({
          op: 'drift',
          result: 'succeeded',
          drift: { detected: true },
        });
        expect(await eventReasons(run, 'm-a')).toContain('DriftDetected');
        // Issue 10, class 6: the apply pinned the digest its source container ran (the local node reports it
        // as a kubelet does), and the drift check ran that digest, not the tag.
        const pinned = ready.status?.source?.pinnedImage ?? '';
        expect(pinned).toMatch(/^captf\.local\/sample-machine@sha256:[0-9a-f]{64}$/);
        const driftJob = (await jobsOf(run, 'm-a')).find((job) => job.includes('-drift-')) ?? '';
        const driftImage = await run.kubectl.run([
          'get',
          'job',
          driftJob,
          '-n',
          run.namespace,
          '-o',
          'jsonpath={.spec.template.spec.containers[?(@.name=="source")].image}',
        ]);
        expect(driftImage.trim()).toBe(pinned);
        // Report, not Remediate: the drift starts no apply.
        expect((await jobsOf(run, 'm-a')).filter((job) => job.includes('-apply-'))).toHaveLength(1);
      },
      5 * MINUTE,
    );

    beforeDelete();

    it(
      'delete → a destroy Job runs → the finalizer goes and the object is gone',
      async () => {
        const run = runOf();
        const before = await readObject(run, RESOURCE.TerraformMachine, 'm-a');
        expect(before?.metadata.finalizers?.length).toBeGreaterThan(0);
        await run.kubectl.run(['delete', 'terraformmachine', 'm-a', '-n', run.namespace, '--wait=false']);

        await waitFor(
          'm-a gone',
          () => readObject<ObservedObject>(run, RESOURCE.TerraformMachine, 'm-a'),
          (o) => o === undefined,
          3 * MINUTE,
        );
        const messages = (await eventsOf(run, 'm-a')).map(
          (event) => `${event.reason}: ${event.message ?? ''}`,
        );
        expect(messages).toEqual(
          expect.arrayContaining([
            expect.stringMatching(/^JobCreated: destroy Job captf-m-m-a-destroy-a1-/),
            expect.stringMatching(/^JobSucceeded: destroy Job captf-m-m-a-destroy-a1-\S+ succeeded/),
          ]),
        );
      },
      5 * MINUTE,
    );
  });
}
