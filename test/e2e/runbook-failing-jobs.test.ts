import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bashBlocks, blockOf, type RunbookShell, runbookShell } from '../env/runbook.ts';
import {
  applyObjects,
  conditionOf,
  type E2eRun,
  machine,
  type ObservedObject,
  patchObject,
  pinnedJobs,
  podsOfJob,
  RESOURCE,
  readObject,
  startE2eRun,
  waitFor,
  waitObject,
  waitReady,
} from './harness.ts';

// The failing-Jobs runbook as a test (issue 15): every ```bash block of docs/runbooks/failing-jobs.md is
// read from the markdown and run as written, with kubectl (on PATH, bound to the test stack) and jq, against
// machines made to fail each documented way. Only the variables the runbook tells the reader to set (its
// first block) come from the test, through the environment; so when the doc changes, the test runs the
// new text, and an answer the doc promises but the product does not give fails here.

const MINUTE = 60_000;
const RUNBOOK = join(import.meta.dirname, '..', '..', 'docs', 'runbooks', 'failing-jobs.md');

const blocks = bashBlocks(readFileSync(RUNBOOK, 'utf8'));

/** The `index`-th bash block of the section whose title starts with `section` (throws when there is none). */
function block(section: string, index = 0): string {
  return blockOf(blocks, section, index);
}

/** What the runbook's commands use; `JOB` is set by step 4's own first line. */
type RunbookVariables = { NS: string; KIND: string; NAME: string; JOB?: string };

let run: E2eRun;
let shell: RunbookShell;

/** Runs a runbook block as the reader would in bash. */
async function runbook(
  code: string,
  variables: RunbookVariables,
): Promise<{ stdout: string; stderr: string }> {
  return shell.run(code, variables);
}

/** The variables for one machine of this run. */
function vars(name: string, job?: string): RunbookVariables {
  return {
    NS: run.namespace,
    KIND: 'terraformmachine',
    NAME: name,
    ...(job === undefined ? {} : { JOB: job }),
  };
}

/** A TSV line of step 1's queries, for objects of this run's namespace only (the stack is shared). */
function tsvRows(stdout: string): string[][] {
  return stdout
    .split('\n')
    .filter(Boolean)
    .map((line) => line.split('\t'))
    .filter((cells) => cells[1]?.startsWith(`${run.namespace}/`));
}

/** Step 1's first query: the failing op conditions of this run, by object name. */
async function step1Failing(): Promise<Map<string, string[]>> {
  const { stdout } = await runbook(block('Step 1'), vars('-'));
  const rows = tsvRows(stdout);
  const byName = new Map(rows.map((cells) => [cells[1]?.split('/')[1] ?? '', cells]));
  // One line per failing op condition: no object of ours fails two ops here.
  expect(byName.size).toBe(rows.length);
  return byName;
}

/** Step 3's first query (`status.lastRun`, shaped by the runbook's jq). */
interface LastRunAnswer {
  job: string;
  op: string;
  attempt: number;
  result: string;
  reason: string;
  error: { kind: string; step?: string; summary?: string } | null;
  warnings: string[] | null;
  steps: string[];
}

async function step3LastRun(name: string): Promise<LastRunAnswer> {
  return JSON.parse((await runbook(block('Step 3'), vars(name))).stdout) as LastRunAnswer;
}

/** Step 3's second query: retries. */
interface RetryAnswer {
  waitReason: string | null;
  nextAttemptAt: string | null;
  attempts: Record<string, { failures?: number; newest?: string }> | null;
}

async function step3Retries(name: string): Promise<RetryAnswer> {
  return JSON.parse((await runbook(block('Step 3', 1), vars(name))).stdout) as RetryAnswer;
}

/** Waits until a machine's newest bookkept run has `reason`, as the controller records it. */
function waitReason(name: string, reason: string, timeoutMs: number): Promise<ObservedObject> {
  return waitObject(
    run,
    RESOURCE.TerraformMachine,
    name,
    `lastRun.reason ${reason}`,
    (o) => o.status?.lastRun?.reason === reason,
    timeoutMs,
  );
}

/** Step 2: the reason is the op condition's, and `status.lastRun.reason` holds the same one. */
function expectStep2(object: ObservedObject, reason: string): void {
  expect(conditionOf(object, 'ApplyJobSucceeded')).toMatchObject({ status: 'False', reason });
  expect(object.status?.lastRun?.reason).toBe(reason);
  // ApplyJobSucceeded=False makes Ready=False with the same reason (step 1's note).
  expect(conditionOf(object, 'Ready')).toMatchObject({ status: 'False', reason });
}

/**
 * Step 5's first block (its first command describes the Job's pods, the second lists the object's Events),
 * or with `index` 1 the Events naming the Job, for a Job whose pods are gone.
 */
async function step5(name: string, job: string, index = 0): Promise<string> {
  const { stdout, stderr } = await runbook(block('Step 5', index), vars(name, job));
  return `${stdout}\n${stderr}`;
}

/**
 * A Job killed at its deadline: once the Job controller's deletion of its pods has gone through (a reader
 * comes minutes later; the test waits for it, bounded), step 4's log block finds no pod, as the runbook says.
 */
async function expectNoPodLeft(name: string, job: string): Promise<void> {
  await waitFor(
    `the pods of ${job} deleted`,
    () => podsOfJob(run, job),
    (pods) => pods.length === 0,
    MINUTE,
  );
  await expect(runbook(block('Step 4'), vars(name))).rejects.toThrow(/timed out waiting for the condition/);
}

/** Machines of the run, one per failure the runbook covers. */
const M = {
  apply: 'apply-failed',
  pull: 'pull-failed',
  invalid: 'image-invalid',
  deadline: 'deadline',
  blocked: 'blocked',
} as const;

/** A label the held retry of `apply-failed` waits for on the node (see the ApplyFailed test). */
const HOLD_LABEL = 'captf.io/runbook-hold';

beforeAll(async () => {
  run = await startE2eRun('runbook');
  shell = runbookShell(MINUTE);
  await applyObjects(run, [
    // cidrhost("10.20.0.0/16", 100 + index) has no such host: the plan fails (a Terraform step).
    machine(run, M.apply, { variables: { index: 100_000 } }),
    // No such image in the local registry: ErrImagePull, then the deadline.
    machine(run, M.pull, {
      image: 'captf.local/no-such-module:1',
      jobs: { activeDeadlineSeconds: 30, lockTimeoutSeconds: 5 },
    }),
    // The runner image pulls fine but has no /captf/module nor /captf/runtime: it breaks the image contract.
    machine(run, M.invalid, { image: 'captf.local/runner:dev' }),
    // The apply sleeps 600 s inside a 40 s deadline.
    machine(run, M.deadline, {
      variables: { sleep_seconds: 600 },
      jobs: { activeDeadlineSeconds: 40, lockTimeoutSeconds: 5 },
    }),
    // Applied first; a new generation then replaces the server, a destructive plan (see its test).
    machine(run, M.blocked, {}),
  ]);
}, 3 * MINUTE);

afterAll(async () => {
  await run?.close();
  shell?.close();
}, MINUTE);

describe('the runbook text', () => {
  it('tells the reader to set NS, KIND and NAME, the only variables the test substitutes', () => {
    const assignments = block('Symptoms')
      .trim()
      .split(/\s+/)
      .map((word) => word.split('=')[0]);
    expect(assignments).toEqual(['NS', 'KIND', 'NAME']);
    // Steps 1, 3 (two), 4 (three) and 5 (two); a new block would need its answer checked here.
    expect(blocks.map((b) => b.section.split(':')[0])).toEqual([
      'Symptoms',
      'Step 1',
      'Step 1',
      'Step 3',
      'Step 3',
      'Step 4',
      'Step 4',
      'Step 4',
      'Step 5',
      'Step 5',
    ]);
  });
});

describe.concurrent('each failure through the runbook, on the real stack', () => {
  it(
    'ApplyFailed: a failed plan step, its log and StepFailed event; still listed (False) while the retry runs',
    async () => {
      const failed = await waitReason(M.apply, 'ApplyFailed', 3 * MINUTE);
      expectStep2(failed, 'ApplyFailed');

      const rows = await step1Failing();
      expect(rows.get(M.apply)).toEqual([
        'TerraformMachine',
        `${run.namespace}/${M.apply}`,
        'ApplyJobSucceeded',
        'ApplyFailed',
        expect.stringMatching(/^apply failed: .*cidrhost|^apply failed: .*host number/s),
      ]);

      const lastRun = await step3LastRun(M.apply);
      expect(lastRun).toMatchObject({ op: 'apply', attempt: 1, result: 'failed', reason: 'ApplyFailed' });
      expect(lastRun.error).toMatchObject({ kind: 'step', step: 'plan' });
      expect(lastRun.error?.summary).toMatch(/cidrhost|host number/);
      // The steps that ran, with exit codes: init passed, plan failed.
      expect(lastRun.steps).toContainEqual(expect.stringMatching(/^init exit 0 \d+(\.\d+)?s$/));
      expect(lastRun.steps).toContainEqual(expect.stringMatching(/^plan exit [1-9]\d* \d+(\.\d+)?s$/));

      const retries = await step3Retries(M.apply);
      expect(retries.waitReason).toBe('Backoff');
      expect(Date.parse(retries.nextAttemptAt ?? '')).toBeGreaterThan(Date.now());
      expect(retries.attempts?.apply?.failures).toBe(1);

      // Step 4: the block sets JOB from lastRun.job itself, then prints the runner's output.
      const log = (await runbook(block('Step 4'), vars(M.apply))).stdout;
      expect(log).toMatch(/captf-runner: step init: .*started/);
      expect(log).toMatch(/captf-runner: step plan: exit [1-9]\d* after \d/);
      expect(log).toMatch(/^\[plan\] .*(cidrhost|host number)/m);
      // The run log the runner kept (src/core/run-log.ts): the same lines, readable after the pod.
      const kept = (await runbook(block('Step 4', 1), vars(M.apply))).stdout;
      expect(kept).toMatch(/captf-runner: step init: .*started/);
      expect(kept).toMatch(/^\[plan\] .*(cidrhost|host number)/m);
      expect(kept).toMatch(/captf-runner: result failed/);
      // Then the object's run logs: name, type, keys, age, Job, op.
      expect(kept).toMatch(
        new RegExp(
          `^captf-log-${lastRun.job}\\s+captf\\.io/run-log\\s+1\\s.*\\s${lastRun.job}\\s+apply\\s*$`,
          'm',
        ),
      );
      const jobs = (await runbook(block('Step 4', 2), vars(M.apply))).stdout;
      expect(jobs).toMatch(/OWNER-KIND\s+OP\s+ATTEMPT/);
      expect(jobs).toMatch(new RegExp(`^${lastRun.job}\\s.*TerraformMachine\\s+apply\\s+1\\s*$`, 'm'));

      const described = await step5(M.apply, lastRun.job);
      expect(described).toMatch(/Exit Code:\s+[1-9]/);
      expect(described).toMatch(/JobFailed/);
      expect(described).toMatch(/StepFailed/);

      // The retry: a scheduling change is no input change, so the next retry (after the 60 s backoff) picks
      // it up; it holds the retry's pod Pending until the node gets the label, so the test sees the retry in
      // flight for as long as it needs, without racing a short plan.
      await patchObject(run, RESOURCE.TerraformMachine, M.apply, {
        spec: {
          jobs: pinnedJobs(run, { [HOLD_LABEL]: 'released' }),
        },
      });
      const retrying = await waitObject(
        run,
        RESOURCE.TerraformMachine,
        M.apply,
        'the retry (attempt 2) running',
        (o) => o.status?.activeJob?.attempt === 2 && o.status.waitReason === 'JobActive',
        3 * MINUTE,
      );
      expect(retrying.status?.lastRun).toMatchObject({ attempt: 1, reason: 'ApplyFailed' });
      expect((await step1Failing()).get(M.apply)?.[3]).toBe('ApplyFailed');
      const inFlight = await step3Retries(M.apply);
      expect(inFlight.waitReason).toBe('JobActive');
      expect(inFlight.attempts?.apply?.failures).toBe(1);
      // The retry's pod is held: Pending, waiting for the label.
      const retryJob = retrying.status?.activeJob?.name ?? '';
      const held = JSON.parse(
        await run.kubectl.run([
          'get',
          'pods',
          '-n',
          run.namespace,
          '-l',
          `job-name=${retryJob}`,
          '-o',
          'json',
        ]),
      ) as { items: { spec: { nodeSelector?: Record<string, string> }; status: { phase: string } }[] };
      expect(held.items.map((p) => [p.spec.nodeSelector?.[HOLD_LABEL], p.status.phase])).toEqual([
        ['released', 'Pending'],
      ]);
      expect((await step3LastRun(M.apply)).attempt).toBe(1);

      await run.kubectl.run(['label', 'node', run.nodeName, `${HOLD_LABEL}=released`, '--overwrite']);
      // Every look while the retry runs still lists the failure, until the retry's own failure is recorded.
      let looksInFlight = 0;
      await waitFor(
        'the retry bookkept, listed as ApplyFailed at every look',
        async () => {
          const object = await readObject(run, RESOURCE.TerraformMachine, M.apply);
          const row = (await step1Failing()).get(M.apply);
          expect(row?.slice(2, 4)).toEqual(['ApplyJobSucceeded', 'ApplyFailed']);
          if (object?.status?.activeJob?.name === retryJob) looksInFlight++;
          return object;
        },
        (o) => o?.status?.lastRun?.attempt === 2 && o.status.activeJob === undefined,
        3 * MINUTE,
        1000,
      );
      expect(looksInFlight).toBeGreaterThan(0);
      const second = await step3LastRun(M.apply);
      expect(second.job).toBe(retryJob);
      expect(second).toMatchObject({ attempt: 2, result: 'failed', reason: 'ApplyFailed' });
      expect(second.error).toMatchObject({ kind: 'step', step: 'plan' });
      expect((await step3Retries(M.apply)).attempts?.apply?.failures).toBe(2);
    },
    8 * MINUTE,
  );

  it(
    'ImagePullFailed: error kind unknown, no pod left, the pull errors in the Events naming the Job',
    async () => {
      const failed = await waitReason(M.pull, 'ImagePullFailed', 3 * MINUTE);
      expectStep2(failed, 'ImagePullFailed');
      expect((await step1Failing()).get(M.pull)?.slice(2, 4)).toEqual([
        'ApplyJobSucceeded',
        'ImagePullFailed',
      ]);

      const lastRun = await step3LastRun(M.pull);
      expect(lastRun).toMatchObject({ op: 'apply', attempt: 1, result: 'failed', reason: 'ImagePullFailed' });
      expect(lastRun.error?.kind).toBe('unknown');
      // The source container never started: no step ran.
      expect(lastRun.steps).toEqual([]);

      // The Job controller deleted the pod at the deadline: nothing to log, nothing to describe.
      await expectNoPodLeft(M.pull, lastRun.job);
      const answer = await step5(M.pull, lastRun.job);
      expect(answer).toMatch(/No resources found/);
      expect(answer).toMatch(/JobFailed .*\(ImagePullFailed\)/);
      // The pod's Events outlive it: the pull errors and the deadline.
      const events = await step5(M.pull, lastRun.job, 1);
      expect(events).toMatch(/ErrImagePull/);
      expect(events).toMatch(/DeadlineExceeded/);
    },
    5 * MINUTE,
  );

  it(
    'ImageInvalid: error kind image-layout at prepare, the runner says what is missing',
    async () => {
      const failed = await waitReason(M.invalid, 'ImageInvalid', 3 * MINUTE);
      expectStep2(failed, 'ImageInvalid');
      expect((await step1Failing()).get(M.invalid)?.slice(2, 4)).toEqual([
        'ApplyJobSucceeded',
        'ImageInvalid',
      ]);

      const lastRun = await step3LastRun(M.invalid);
      expect(lastRun).toMatchObject({ op: 'apply', attempt: 1, result: 'failed', reason: 'ImageInvalid' });
      expect(lastRun.error).toMatchObject({ kind: 'image-layout' });
      expect(lastRun.error?.summary).toMatch(/\/captf\/module/);

      const log = (await runbook(block('Step 4'), vars(M.invalid))).stdout;
      expect(log).toMatch(/captf\/module/);

      const answer = await step5(M.invalid, lastRun.job);
      expect(answer).toMatch(/JobFailed/);
    },
    5 * MINUTE,
  );

  it(
    'JobDeadlineExceeded: error kind interrupted, no pod or pod log left but the kept run log, the deadline in the Events',
    async () => {
      const failed = await waitReason(M.deadline, 'JobDeadlineExceeded', 4 * MINUTE);
      expectStep2(failed, 'JobDeadlineExceeded');
      expect((await step1Failing()).get(M.deadline)?.slice(2, 4)).toEqual([
        'ApplyJobSucceeded',
        'JobDeadlineExceeded',
      ]);

      const lastRun = await step3LastRun(M.deadline);
      expect(lastRun).toMatchObject({
        op: 'apply',
        attempt: 1,
        result: 'failed',
        reason: 'JobDeadlineExceeded',
      });
      expect(lastRun.error?.kind).toBe('interrupted');
      expect((await step3Retries(M.deadline)).waitReason).toBe('Backoff');

      await expectNoPodLeft(M.deadline, lastRun.job);
      // The runner, stopped with SIGTERM, kept its log before it exited: readable with its pod gone.
      const kept = (await runbook(block('Step 4', 1), vars(M.deadline))).stdout;
      expect(kept).toMatch(/captf-runner: step init: .*started/);
      expect(kept).toMatch(/captf-runner: result interrupted/);

      const answer = await step5(M.deadline, lastRun.job);
      expect(answer).toMatch(/No resources found/);
      expect(answer).toMatch(/JobDeadlineExceeded/);
      const events = await step5(M.deadline, lastRun.job, 1);
      expect(events).toMatch(/DeadlineExceeded .*Job was active longer than specified deadline/);
    },
    6 * MINUTE,
  );

  it(
    'DestructivePlanBlocked: not a failure (step 1 leaves it out), found by the blocked query, error kind blocked',
    async () => {
      await waitReady(run, RESOURCE.TerraformMachine, M.blocked, 3 * MINUTE);
      await patchObject(run, RESOURCE.TerraformMachine, M.blocked, {
        spec: { variables: { generation: 2 } },
      });
      const blocked = await waitObject(
        run,
        RESOURCE.TerraformMachine,
        M.blocked,
        'the destructive plan blocked, its TerraformPlan waiting',
        (o) =>
          o.status?.lastRun?.reason === 'DestructivePlanBlocked' &&
          o.status.pendingPlanRef !== undefined &&
          o.status.activeJob === undefined &&
          o.status.waitReason === 'AwaitingApproval',
        3 * MINUTE,
      );
      // Not a failure: Unknown, with the wait's reason while the TerraformPlan waits (step 1's note).
      expect(conditionOf(blocked, 'ApplyJobSucceeded')).toMatchObject({
        status: 'Unknown',
        reason: 'AwaitingApproval',
      });
      const plan = blocked.status?.pendingPlanRef?.name ?? '';
      expect(plan).not.toBe('');

      expect((await step1Failing()).has(M.blocked)).toBe(false);
      const { stdout } = await runbook(block('Step 1', 1), vars('-'));
      expect(tsvRows(stdout)).toEqual([
        ['TerraformMachine', `${run.namespace}/${M.blocked}`, 'DestructivePlanBlocked', plan],
      ]);

      const lastRun = await step3LastRun(M.blocked);
      expect(lastRun).toMatchObject({ op: 'apply', result: 'blocked', reason: 'DestructivePlanBlocked' });
      expect(lastRun.error?.kind).toBe('blocked');
      // The plan the runbook says to read: it destroys what the new generation replaces.
      const planSpec = JSON.parse(
        await run.kubectl.run(['get', 'terraformplan', plan, '-n', run.namespace, '-o', 'jsonpath={.spec}']),
      ) as { destroy: number };
      expect(planSpec.destroy).toBeGreaterThan(0);

      const answer = await step5(M.blocked, lastRun.job);
      expect(answer).toMatch(/DestructivePlanBlocked/);
    },
    6 * MINUTE,
  );
});

describe('step 1 across all of them', () => {
  it('lists exactly the four failing objects, each with its reason, and not the blocked one', async () => {
    const rows = await step1Failing();
    expect(
      Object.fromEntries([...rows].map(([name, cells]) => [name, [cells[0], cells[2], cells[3]]])),
    ).toEqual({
      [M.apply]: ['TerraformMachine', 'ApplyJobSucceeded', 'ApplyFailed'],
      [M.pull]: ['TerraformMachine', 'ApplyJobSucceeded', 'ImagePullFailed'],
      [M.invalid]: ['TerraformMachine', 'ApplyJobSucceeded', 'ImageInvalid'],
      [M.deadline]: ['TerraformMachine', 'ApplyJobSucceeded', 'JobDeadlineExceeded'],
    });
    // The message is `<op> <result>: <curated summary>`.
    for (const cells of rows.values()) expect(cells[4]).toMatch(/^apply failed: \S/);
  });
});
