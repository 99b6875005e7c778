import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOCAL_RUNNER_IMAGE } from '../../src/local/local-controller.ts';
import { realNodeBinaries } from '../../src/local/real-node/real-node.ts';
import { testStack } from '../env/index.ts';
import {
  applyObjects,
  conditionOf,
  type E2eRun,
  eventReasons,
  eventsOf,
  jobsOf,
  machine,
  type ObservedObject,
  type ObservedPlan,
  patchObject,
  podsOfJob,
  RESOURCE,
  readObject,
  startE2eRun,
  stateSecretName,
  waitFor,
  waitObject,
} from './harness.ts';

// Runs that go wrong, end to end (DESIGN.md sections 4, 7 and 12), on the real node (a kubelet with
// containerd and runc, src/local/real-node/): a module image that cannot be pulled, a deadline kill, a
// drain, and a run killed while holding the state lock. Each uses its own machine on the same local run,
// concurrently; the sample machine module sleeps `sleep_seconds` inside its apply (a local-exec in the Job's
// container) so the run is mid-apply, holding the state lock, when the test strikes. What the kubelet did
// is read from the API as a person reads it: pod statuses, `kubectl logs`.

const MINUTE = 60_000;
let run: E2eRun;

beforeAll(async () => {
  run = await startE2eRun('faults');
}, 3 * MINUTE);

afterAll(async () => {
  await run?.close();
}, MINUTE);

/** The newest Job of a machine, once it exists. */
async function newestJob(name: string, timeoutMs: number): Promise<string> {
  const jobs = await waitFor(
    `a Job of ${name}`,
    () => jobsOf(run, name),
    (j) => j.length > 0,
    timeoutMs,
  );
  return jobs.at(-1) ?? '';
}

/** The `source` container's log, through the API server and the kubelet ('' until it starts). */
async function sourceLog(pod: string): Promise<string> {
  return run.kubectl.run(['logs', pod, '-n', run.namespace, '-c', 'source']).catch(() => '');
}

/**
 * The host PIDs of the runner in a pod's containers: runc runs them in the pod's cgroup (the kubelet's
 * cgroupfs driver names it `pod<uid>`), as the runner's own command line (`…/runner run --op=…`).
 */
function runnerPids(podUid: string): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').join(' ');
      const cgroup = readFileSync(`/proc/${entry}/cgroup`, 'utf8');
      if (/\/runner run --op=/.test(cmdline) && cgroup.includes(`pod${podUid}`))
        pids.push(Number.parseInt(entry, 10));
    } catch {
      // The process ended while it was read.
    }
  }
  return pids;
}

/** Waits until the Job's pod runs the busy resource's sleep (the apply is mid-way, the state lock held). */
async function waitUntilSleeping(job: string): Promise<{ pod: string; uid: string }> {
  const pod =
    (
      await waitFor(
        `a pod of ${job}`,
        () => podsOfJob(run, job),
        (p) => p.length > 0,
        MINUTE,
      )
    )[0] ?? '';
  const uid = (
    await run.kubectl.run(['get', 'pod', pod, '-n', run.namespace, '-o', 'jsonpath={.metadata.uid}'])
  ).trim();
  await waitFor(
    `${pod} to reach the sleep`,
    () => sourceLog(pod),
    (log) => log.includes('terraform_data.busy[0]: Provisioning with'),
    2 * MINUTE,
  );
  return { pod, uid };
}

/** Every container state the pods of a Job show, as `<container> <state> <reason> [<exit code>]`. */
async function containerStates(job: string): Promise<string[]> {
  const out = await run.kubectl
    .run(['get', 'pods', '-n', run.namespace, '-l', `job-name=${job}`, '-o', 'json'])
    .catch(() => '{"items":[]}');
  type Status = { name: string; state?: Record<string, { reason?: string; exitCode?: number }> };
  const pods = JSON.parse(out) as {
    items: { status?: { initContainerStatuses?: Status[]; containerStatuses?: Status[] } }[];
  };
  return pods.items.flatMap((pod) =>
    [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])].flatMap((c) =>
      Object.entries(c.state ?? {}).map(([state, detail]) =>
        [c.name, state, detail.reason ?? '', detail.exitCode ?? ''].join(' ').trim(),
      ),
    ),
  );
}

/**
 * Waits for one of our objects like `waitObject`, recording meanwhile every container state the pods of
 * `job` showed (polled), so a test can say what the kubelet reported on the way.
 */
async function waitObjectSeeing(
  job: string,
  name: string,
  what: string,
  done: (object: ObservedObject) => boolean,
  timeoutMs: number,
): Promise<{ object: ObservedObject; seen: string[] }> {
  const seen = new Set<string>();
  let watching = true;
  const watcher = (async () => {
    while (watching) {
      for (const state of await containerStates(job)) seen.add(state);
      await sleep(300);
    }
  })();
  try {
    const object = await waitObject(run, RESOURCE.TerraformMachine, name, what, done, timeoutMs);
    return { object, seen: [...seen] };
  } finally {
    watching = false;
    await watcher;
  }
}

/** Whether a resource of the run's namespace exists. */
async function exists(resource: string, name: string): Promise<boolean> {
  const out = await run.kubectl.run([
    'get',
    resource,
    name,
    '-n',
    run.namespace,
    '--ignore-not-found',
    '-o',
    'name',
  ]);
  return out.trim() !== '';
}

describe.concurrent('runs that go wrong, on the real stack', () => {
  it(
    'a machine deleted while its apply Job cannot pull its image: the Job is deleted (UnstartedJobDeleted), not waited for, and nothing is left',
    async () => {
      const name = 'pull-deleted';
      // The default deadline (600 s) is longer than this test may take: only deleting the Job ends it in time.
      await applyObjects(run, [machine(run, name, { image: 'captf.local/no-such-module:1' })]);
      const waiting = await waitObject(
        run,
        RESOURCE.TerraformMachine,
        name,
        'waitReason ImagePullBackOff',
        (o) => o.status?.waitReason === 'ImagePullBackOff',
        // The pod starts first (the runner's pull, its init container): tens of seconds on a busy node.
        2 * MINUTE,
      );
      const job = waiting.status?.activeJob?.name ?? '';
      const state = stateSecretName(waiting.status?.stateSuffix ?? '');
      expect(await exists('job', job)).toBe(true);
      expect(await exists('secret', `captf-run-${job}`)).toBe(true);
      expect(await exists('secret', state)).toBe(true);
      expect(await exists('lease', `lock-${state}`)).toBe(true);

      await run.kubectl.run(['delete', RESOURCE.TerraformMachine, name, '-n', run.namespace, '--wait=false']);
      await waitFor(
        `${name} gone`,
        () => readObject(run, RESOURCE.TerraformMachine, name),
        (o) => o === undefined,
        2 * MINUTE,
      );
      expect(await eventReasons(run, name)).toContain('UnstartedJobDeleted');
      for (const [resource, left] of [
        ['job', job],
        ['secret', `captf-run-${job}`],
        ['secret', state],
        ['lease', `lock-${state}`],
      ] as const) {
        await waitFor(
          `${resource} ${left} gone`,
          () => exists(resource, left),
          (is) => !is,
          MINUTE,
        );
      }
      await waitFor(
        `the pods of ${job} gone`,
        () => podsOfJob(run, job),
        (pods) => pods.length === 0,
        MINUTE,
      );
    },
    6 * MINUTE,
  );

  it(
    'a machine whose every apply failed (a variable of the wrong type) goes without a destroy once deleted, and leaves nothing',
    async () => {
      const name = 'never-applied';
      // The module declares `generation` a number: every plan fails before OpenTofu writes any state, and a
      // destroy, which evaluates the same variables, would fail the same way (DESIGN.md section 3 row 1).
      await applyObjects(run, [machine(run, name, { variables: { generation: 'soon' } })]);
      const failed = await waitObject(
        run,
        RESOURCE.TerraformMachine,
        name,
        'the failed apply bookkept',
        (o) => o.status?.lastRun?.result === 'failed',
        3 * MINUTE,
      );
      console.log(`[faults] ${name}: ${JSON.stringify(failed.status?.lastRun?.error)}`);
      expect(failed.status?.lastRun).toMatchObject({ op: 'apply', result: 'failed' });
      expect(failed.status?.ready).not.toBe(true);
      expect(failed.status?.waitReason).toBe('Backoff');
      const jobs = await jobsOf(run, name);
      const state = stateSecretName(failed.status?.stateSuffix ?? '');
      expect(jobs.length).toBeGreaterThan(0);
      expect(await exists('secret', state)).toBe(true);

      await run.kubectl.run(['delete', RESOURCE.TerraformMachine, name, '-n', run.namespace, '--wait=false']);
      await waitFor(
        `${name} gone`,
        () => readObject(run, RESOURCE.TerraformMachine, name),
        (o) => o === undefined,
        MINUTE,
      );
      // No destroy Job was created for it: every Job the Events name is an apply (a second one may have
      // started after the first backoff, 60 s, on a slow run).
      const events = await eventsOf(run, name);
      const created = events.filter((e) => e.reason === 'JobCreated');
      expect(created.length).toBeGreaterThan(0);
      for (const event of created) expect(event.message ?? '').toMatch(/^apply Job /);
      // And an Event says why none ran.
      const notNeeded = events.filter((e) => e.reason === 'DestroyNotNeeded');
      expect(notNeeded).toHaveLength(1);
      expect(notNeeded[0]?.message ?? '').toContain(`its state Secret ${state}`);
      const left = [
        ...jobs.flatMap((job) => [
          ['job', job],
          ['secret', `captf-run-${job}`],
          ['secret', `captf-log-${job}`],
        ]),
        ['secret', state],
        ['lease', `lock-${state}`],
      ] as const;
      for (const [resource, leftover] of left) {
        await waitFor(
          `${resource} ${leftover} gone`,
          () => exists(resource, leftover),
          (is) => !is,
          MINUTE,
        );
      }
    },
    6 * MINUTE,
  );

  it(
    'a destroy that fails on a broken variable starts again at once when the variable is fixed, not at its backoff',
    async () => {
      const name = 'destroy-fixed';
      await applyObjects(run, [machine(run, name, {})]);
      await waitObject(
        run,
        RESOURCE.TerraformMachine,
        name,
        'Ready',
        (o) => o.status?.ready === true,
        3 * MINUTE,
      );
      // A variable of the wrong type breaks every plan, the destroy's too (it evaluates the same variables).
      await patchObject(run, RESOURCE.TerraformMachine, name, {
        spec: { variables: { generation: 'soon' } },
      });
      await run.kubectl.run(['delete', RESOURCE.TerraformMachine, name, '-n', run.namespace, '--wait=false']);
      const failed = await waitObject(
        run,
        RESOURCE.TerraformMachine,
        name,
        'the failed destroy in its backoff',
        (o) => o.status?.lastRun?.op === 'destroy' && o.status?.waitReason === 'Backoff',
        3 * MINUTE,
      );
      expect(failed.status?.lastRun).toMatchObject({
        result: 'failed',
        error: { kind: 'step', step: 'destroy' },
      });
      const notBefore = Date.parse(failed.status?.nextAttemptAt ?? '');
      expect(notBefore).toBeGreaterThan(Date.now() + 20_000);

      // Fixed: an input change is not a retry (DESIGN.md section 4), so the next destroy does not wait.
      await patchObject(run, RESOURCE.TerraformMachine, name, { spec: { variables: { generation: 1 } } });
      const retried = await waitObject(
        run,
        RESOURCE.TerraformMachine,
        name,
        'the second destroy started',
        (o) =>
          o.status?.activeJob?.op === 'destroy' && o.status.activeJob.name !== failed.status?.lastRun?.job,
        MINUTE,
      );
      const created = await run.kubectl.run([
        'get',
        'job',
        retried.status?.activeJob?.name ?? '',
        '-n',
        run.namespace,
        '-o',
        'jsonpath={.metadata.creationTimestamp}',
      ]);
      expect(Date.parse(created)).toBeLessThan(notBefore);
      await waitFor(
        `${name} gone`,
        () => readObject(run, RESOURCE.TerraformMachine, name),
        (o) => o === undefined,
        3 * MINUTE,
      );
      // The first apply's and the fixed destroy's.
      expect((await eventReasons(run, name)).filter((r) => r === 'JobSucceeded')).toHaveLength(2);
    },
    8 * MINUTE,
  );

  it(
    'C09: an unknown module image shows ImagePullBackOff at once and is recorded as ImagePullFailed (counted) at the deadline',
    async () => {
      await applyObjects(run, [
        machine(run, 'pull', {
          image: 'captf.local/no-such-module:1',
          // A real node starts the pod in seconds to tens of seconds (the runner's pull, its init container)
          // before the module image fails: the deadline leaves the controller time to see the failure.
          jobs: { activeDeadlineSeconds: 120, lockTimeoutSeconds: 5 },
        }),
      ]);
      const waiting = await waitObject(
        run,
        RESOURCE.TerraformMachine,
        'pull',
        'waitReason ImagePullBackOff',
        (o) => o.status?.waitReason === 'ImagePullBackOff',
        // The pod starts first (the runner's pull, its init container): tens of seconds on a busy node.
        2 * MINUTE,
      );
      expect(waiting.status?.activeJob?.op).toBe('apply');
      // The real kubelet reports the image it cannot pull: the condition names it, not only the container.
      expect(conditionOf(waiting, 'ApplyJobSucceeded')?.message).toContain(
        'the image captf.local/no-such-module:1 of container source',
      );
      const job = waiting.status?.activeJob?.name ?? '';

      // What the kubelet reports of the source container until the run is recorded: the pull failing,
      // then (the Job controller deleting the pod at the deadline) the container it never started.
      const { object: failed, seen } = await waitObjectSeeing(
        job,
        'pull',
        'the run recorded as ImagePullFailed',
        (o) => o.status?.lastRun?.reason === 'ImagePullFailed',
        3 * MINUTE,
      );
      console.log(`[faults] container states of ${job} until bookkept: ${seen.join('; ')}`);
      expect(seen).toEqual(
        expect.arrayContaining([expect.stringMatching(/^source waiting (ErrImagePull|ImagePullBackOff)$/)]),
      );
      expect(failed.status?.lastRun).toMatchObject({ op: 'apply', result: 'failed', attempt: 1 });
      expect(failed.status?.lastRun?.error?.summary).toContain('container source');
      const conditions = JSON.parse(
        await run.kubectl.run([
          'get',
          'job',
          job,
          '-n',
          run.namespace,
          '-o',
          'jsonpath={.status.conditions}',
        ]),
      ) as { type: string; reason: string }[];
      expect(conditions).toContainEqual(
        expect.objectContaining({ type: 'Failed', reason: 'DeadlineExceeded' }),
      );
      // Counted: the retry waits out the first backoff step (60 s), DESIGN.md section 4.
      expect(failed.status?.waitReason).toBe('Backoff');
      expect(Date.parse(failed.status?.nextAttemptAt ?? '')).toBeGreaterThan(Date.now() + 20_000);
      expect(await eventReasons(run, 'pull')).toContain('JobFailed');
    },
    7 * MINUTE,
  );

  it(
    'a runner killed outright (SIGKILL, as the OOM killer or a lost node does) writes no log: bookkeeping keeps its pod log instead, marked as such',
    async () => {
      const name = 'killed';
      await applyObjects(run, [
        machine(run, name, {
          variables: { sleep_seconds: 600 },
          jobs: { activeDeadlineSeconds: 900, lockTimeoutSeconds: 5 },
        }),
      ]);
      const job = await newestJob(name, MINUTE);
      const { uid } = await waitUntilSleeping(job);
      // The runner process of that pod on this node, killed from the host as the kernel's OOM killer does.
      const pids = runnerPids(uid);
      expect(pids.length).toBeGreaterThan(0);
      for (const pid of pids) process.kill(pid, 'SIGKILL');

      await waitObject(
        run,
        RESOURCE.TerraformMachine,
        name,
        'the killed run bookkept',
        (o) => o.status?.lastRun?.job === job,
        2 * MINUTE,
      );
      const secret = JSON.parse(
        await run.kubectl.run(['get', 'secret', `captf-log-${job}`, '-n', run.namespace, '-o', 'json']),
      ) as { type: string; metadata: { annotations: Record<string, string> }; data: { log: string } };
      expect(secret.type).toBe('captf.io/run-log');
      expect(secret.metadata.annotations).toMatchObject({
        'captf.io/log-source': 'pod-log',
        'captf.io/log-complete': 'false',
      });
      const finishedAt = Date.parse(secret.metadata.annotations['captf.io/finished-at'] ?? '');
      expect(finishedAt).toBeGreaterThan(0);
      // The source container's start, from the pod: before its finish.
      const startedAt = Date.parse(secret.metadata.annotations['captf.io/started-at'] ?? '');
      expect(startedAt).toBeGreaterThan(0);
      expect(startedAt).toBeLessThan(finishedAt);
      const log = Buffer.from(secret.data.log, 'base64').toString('utf8');
      expect(log).toContain('captf-runner: step ');
      expect(log).toContain('terraform_data.busy[0]: Provisioning with');
    },
    5 * MINUTE,
  );

  it(
    'a deadline kill is recorded as JobDeadlineExceeded and counted (backoff before the retry)',
    async () => {
      await applyObjects(run, [
        machine(run, 'slow', {
          variables: { sleep_seconds: 600 },
          // Long enough for the pod to start and OpenTofu to reach the sleep on a busy real node.
          jobs: { activeDeadlineSeconds: 90, lockTimeoutSeconds: 5 },
        }),
      ]);
      await waitUntilSleeping(await newestJob('slow', MINUTE));

      const killed = await waitObject(
        run,
        RESOURCE.TerraformMachine,
        'slow',
        'the run recorded as JobDeadlineExceeded',
        (o) => o.status?.lastRun?.reason === 'JobDeadlineExceeded',
        4 * MINUTE,
      );
      expect(killed.status?.lastRun).toMatchObject({ op: 'apply', result: 'failed', attempt: 1 });
      // The kubelet's SIGTERM at the deadline reached the runner, which stopped OpenTofu and wrote its
      // result as the termination message, read at bookkeeping (kind `interrupted`, not `unknown`).
      expect(killed.status?.lastRun?.error?.kind).toBe('interrupted');
      expect(conditionOf(killed, 'Ready')?.status).toBe('False');
      expect(killed.status?.waitReason).toBe('Backoff');
      expect(Date.parse(killed.status?.nextAttemptAt ?? '')).toBeGreaterThan(Date.now() + 10_000);
      expect(await eventReasons(run, 'slow')).toContain('JobDeadlineExceeded');
    },
    6 * MINUTE,
  );

  it(
    'C07 (one drain): a pod deleted with a grace period while applying is JobInterrupted, not counted, and retried at once',
    async () => {
      await applyObjects(run, [
        machine(run, 'drained', {
          variables: { sleep_seconds: 600 },
          jobs: { activeDeadlineSeconds: 900, lockTimeoutSeconds: 30 },
        }),
      ]);
      const first = await newestJob('drained', MINUTE);
      const { pod } = await waitUntilSleeping(first);
      // A drain: the pod is deleted with a grace period; the runner forwards the interrupt and reports it.
      await run.kubectl.run(['delete', 'pod', pod, '-n', run.namespace, '--grace-period=90', '--wait=false']);

      await waitFor(
        'a JobInterrupted event',
        () => eventReasons(run, 'drained'),
        (reasons) => reasons.includes('JobInterrupted'),
        3 * MINUTE,
      );
      // Not counted: attempt 2 starts on the next step, with no backoff wait in between.
      const retried = await waitObject(
        run,
        RESOURCE.TerraformMachine,
        'drained',
        'attempt 2 started',
        (o) => o.status?.activeJob?.attempt === 2,
        MINUTE,
      );
      expect(retried.status?.lastRun).toMatchObject({
        job: first,
        result: 'interrupted',
        reason: 'JobInterrupted',
      });
      expect(retried.status?.waitReason).not.toBe('Backoff');

      // OpenTofu taints a resource whose create-time provisioner was interrupted (with `on_failure =
      // continue` too): the retry's plan replaces it, a destructive plan, which waits for approval.
      const blocked = await waitObject(
        run,
        RESOURCE.TerraformMachine,
        'drained',
        'the retry blocked on its destructive plan',
        (o) => o.status?.lastRun?.attempt === 2 && o.status?.lastRun?.reason === 'DestructivePlanBlocked',
        3 * MINUTE,
      );
      const plan = await readObject<ObservedPlan>(
        run,
        RESOURCE.TerraformPlan,
        blocked.status?.pendingPlanRef?.name ?? '',
      );
      expect(plan?.spec.changes?.destructive).toEqual(['terraform_data.busy[0]']);
      expect(plan?.spec).toMatchObject({ add: 1, destroy: 1 });
    },
    8 * MINUTE,
  );

  it(
    'a running Job deleted by a user: the kubelet SIGTERMs the runner, which interrupts OpenTofu and writes its log',
    async () => {
      await applyObjects(run, [
        machine(run, 'job-deleted', {
          variables: { sleep_seconds: 600 },
          jobs: { activeDeadlineSeconds: 900, lockTimeoutSeconds: 30 },
        }),
      ]);
      const job = await newestJob('job-deleted', MINUTE);
      await waitUntilSleeping(job);
      // Background propagation (kubectl's default): garbage collection deletes the pod with its grace
      // period and the kubelet sends SIGTERM, as for any Job deleted on a cluster.
      await run.kubectl.run(['delete', 'job', job, '-n', run.namespace, '--wait=false']);

      // The runner's own log Secret, written as its last act: it got the signal, passed an interrupt to
      // OpenTofu (whose answer is in the log) and ended before the grace period ran out.
      const secret = await waitFor(
        `captf-log-${job} written by the runner`,
        () =>
          run.kubectl
            .run(['get', 'secret', `captf-log-${job}`, '-n', run.namespace, '-o', 'json'])
            .then(
              (out) =>
                JSON.parse(out) as {
                  metadata: { annotations: Record<string, string> };
                  data: { log: string };
                },
            )
            .catch(() => undefined),
        (found) => found !== undefined,
        2 * MINUTE,
      );
      expect(secret?.metadata.annotations['captf.io/log-complete']).toBe('true');
      expect(secret?.metadata.annotations['captf.io/log-source']).toBeUndefined();
      const log = Buffer.from(secret?.data.log ?? '', 'base64').toString('utf8');
      expect(log).toContain('received SIGTERM: stopping');
      expect(log).toContain('Interrupt received');
      expect(log).not.toContain('did not stop within');
    },
    6 * MINUTE,
  );

  it(
    'a stale lock left by a killed run is force-unlocked by the next Job (ForceUnlocked), which then applies',
    async () => {
      await applyObjects(run, [
        machine(run, 'locked', {
          variables: { sleep_seconds: 600 },
          jobs: { activeDeadlineSeconds: 900, lockTimeoutSeconds: 5 },
        }),
      ]);
      const first = await newestJob('locked', MINUTE);
      const { uid } = await waitUntilSleeping(first);
      // Killed outright, as a lost node or the OOM killer kills it: OpenTofu never releases its lock Lease.
      // Not `kubectl delete --grace-period=0 --force`: a real kubelet still gives the containers 2 s after
      // SIGTERM, time enough for the runner's interrupt to release the lock.
      const pids = runnerPids(uid);
      expect(pids.length).toBeGreaterThan(0);
      for (const pid of pids) process.kill(pid, 'SIGKILL');
      // The next apply should not sleep again once the lock is dealt with.
      await waitObject(
        run,
        RESOURCE.TerraformMachine,
        'locked',
        'the killed run bookkept',
        (o) => o.status?.lastRun?.job === first,
        2 * MINUTE,
      );
      await run.kubectl.run([
        'patch',
        'terraformmachine',
        'locked',
        '-n',
        run.namespace,
        '--type=merge',
        '-p',
        JSON.stringify({ spec: { variables: { sleep_seconds: 0 } } }),
      ]);

      const unlocked = await waitObject(
        run,
        RESOURCE.TerraformMachine,
        'locked',
        'an apply after the force-unlock',
        (o) => o.status?.lastRun?.result === 'succeeded',
        6 * MINUTE,
      );
      const reasons = await eventReasons(run, 'locked');
      expect(reasons).toContain('ForceUnlocked');
      // The Job that met the lock failed on it first (a lock is only stale once a run reports it).
      expect(reasons.filter((r) => r === 'JobFailed').length).toBeGreaterThanOrEqual(1);
      expect(conditionOf(unlocked, 'Ready')?.status).toBe('True');
      expect(unlocked.spec.providerID).toMatch(/^captf-local:\/\/locked\//);
    },
    10 * MINUTE,
  );
});

// After the runs above (their pods need the runner image): the runner image itself goes missing.
describe('the runner image missing, on the real node', () => {
  it(
    "C09: the runner's init container cannot pull its image: ImagePullBackOff naming it, then ImagePullFailed (counted) at the deadline",
    async () => {
      const node = run.controller.realNode;
      const { crane } = realNodeBinaries(testStack().binDir);
      const image = `${node.registry}/runner:dev`;
      const saved = `${node.registry}/runner:saved`;
      // The registry forgets the tag (kept under another) and containerd the image: the next pod pulls it.
      execFileSync(crane, ['copy', '--insecure', image, saved]);
      // By tag and by digest: the registry keeps a manifest under each name it was pushed by.
      execFileSync(crane, ['delete', '--insecure', image]);
      execFileSync(crane, ['delete', '--insecure', `${node.registry}/runner@${node.digests.runner}`]);
      execFileSync('ctr', [
        '--address',
        node.containerdAddress,
        '-n',
        'k8s.io',
        'images',
        'rm',
        LOCAL_RUNNER_IMAGE,
      ]);
      try {
        await applyObjects(run, [
          machine(run, 'no-runner', { jobs: { activeDeadlineSeconds: 30, lockTimeoutSeconds: 5 } }),
        ]);
        const waiting = await waitObject(
          run,
          RESOURCE.TerraformMachine,
          'no-runner',
          'waitReason ImagePullBackOff',
          (o) => o.status?.waitReason === 'ImagePullBackOff',
          2 * MINUTE,
        );
        expect(conditionOf(waiting, 'ApplyJobSucceeded')?.message).toContain('container runner');
        const job = waiting.status?.activeJob?.name ?? '';
        const { object: failed, seen } = await waitObjectSeeing(
          job,
          'no-runner',
          'the run recorded as ImagePullFailed',
          (o) => o.status?.lastRun?.reason === 'ImagePullFailed',
          3 * MINUTE,
        );
        console.log(`[faults] container states of ${job} until bookkept: ${seen.join('; ')}`);
        expect(seen).toEqual(
          expect.arrayContaining([expect.stringMatching(/^runner waiting (ErrImagePull|ImagePullBackOff)$/)]),
        );
        expect(failed.status?.lastRun).toMatchObject({ op: 'apply', result: 'failed', attempt: 1 });
        expect(failed.status?.lastRun?.error?.summary).toContain('container runner');
        expect(failed.status?.waitReason).toBe('Backoff');
      } finally {
        execFileSync(crane, ['copy', '--insecure', saved, image]);
      }
    },
    6 * MINUTE,
  );
});
