import { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';
import { systemClock } from '../adapters/clock.ts';
import { isKubeError, toKubeError } from '../adapters/kube/errors.ts';
import { CUSTOM_RESOURCES } from '../adapters/kube/resources.ts';
import { SOURCE_CONTAINER } from '../core/classify.ts';
import { LABELS } from '../core/job-labels.ts';
import type { ObjectRef } from '../core/object-ref.ts';
import { planLines } from '../core/plan-text.ts';
import { type PluginCommand, type PluginTarget, parsePluginArgs, pluginUsage } from '../core/plugin-args.ts';
import { type LastRunView, pickRun, runHistory, runLogHeader, runTable } from '../core/run-history.ts';
import { RUN_LOG_KEY, RUN_LOG_SECRET_TYPE, runLogSecretName } from '../core/run-log.ts';
import { isSafetyNetWait, safetyRequeueText } from '../core/safety-requeue.ts';
import { stateObjectsOf } from '../core/state-cleanup.ts';
import { decideUnlock, describeLock, LOCK_INFO_ANNOTATION, unlockPatch } from '../core/unlock-check.ts';
import { WAIT_TABLE } from '../core/wait-table.ts';
import { recordedRefusal } from '../core/write-refusal.ts';
import { type ObjectView, renderView } from '../local/live-view.ts';
import type { TerraformPlan } from '../schemas/kinds/terraform-plan.ts';
import type { WaitReason } from '../schemas/kinds/wait-reason.ts';
import { readPods, readSnapshot } from '../step/read.ts';
import { explainStep } from '../step/step.ts';
import { asJobView, asPodView } from '../step/views.ts';
import { type Caller, connect } from './connect.ts';

/**
 * `kubectl captf` (docs/kubectl-plugin.md): the project's kubectl plugin, one executable bundled from this
 * file (functions/bundle.ts). It speaks to the API server as the caller, with their kubeconfig and rights;
 * every verb but `approve` and `unlock` only reads. Output is what the objects already show (status, the
 * readable plan, redacted run logs); no Secret value but a kept run log's redacted text is ever printed.
 */

/** The kinds `status` lists, in the live view's order. */
const STATUS_KINDS = ['TerraformCluster', 'TerraformMachine', 'TerraformMachinePool'] as const;

/** A failure the caller should read as is (a refusal, nothing to show). */
class Refusal extends Error {}

function out(lines: string | readonly string[]): void {
  process.stdout.write(`${typeof lines === 'string' ? lines : lines.join('\n')}\n`);
}

function refOf(caller: Caller, target: PluginTarget): ObjectRef {
  return { kind: target.kind, namespace: caller.namespace, name: target.name };
}

async function status(caller: Caller): Promise<void> {
  const objects = (
    await Promise.all(
      STATUS_KINDS.map(async (kind) =>
        (
          await caller.reader.listCustomObjects(kind, { namespace: caller.namespace })
        ).map((o) => ({ ...o, kind }) as unknown as ObjectView),
      ),
    )
  ).flat();
  const jobs = await caller.reader.listJobs({
    namespace: caller.namespace,
    labelSelector: { [LABELS.managed]: 'true' },
  });
  out([`namespace ${caller.namespace}`, ...renderView(objects, jobs.map(asJobView))]);
}

async function readTarget(caller: Caller, target: PluginTarget) {
  const object = await caller.reader.getCustomObject(target.kind, caller.namespace, target.name);
  if (!object) throw new Refusal(`${target.kind} ${caller.namespace}/${target.name} not found`);
  return object as unknown as {
    metadata: { uid: string };
    status?: {
      pendingPlanRef?: { name?: string };
      waitReason?: WaitReason;
      nextAttemptAt?: string;
      activeJob?: { name?: string };
      lastRun?: LastRunView;
      conditions?: { type?: string; status?: string; message?: string }[];
    };
  };
}

async function why(caller: Caller, target: PluginTarget): Promise<void> {
  const object = await readTarget(caller, target);
  const wait = object.status?.waitReason;
  if (wait !== undefined)
    out(
      `waiting: ${wait}${object.status?.nextAttemptAt ? ` until ${object.status.nextAttemptAt}` : ''}: ${WAIT_TABLE[wait]?.meaning ?? ''}`,
    );
  const refused = recordedRefusal(object.status?.conditions);
  if (refused !== undefined) out(`  ${refused}`);
  // The step's own read and pure plan, over the caller's reader alone: nothing is written or locked. The
  // Job slots live in the controller's Redis, which the caller does not reach: a free slot is assumed.
  const outcome = await explainStep(
    {
      reads: {
        reader: caller.reader,
        slotUsage: async () => ({ kind: 'counted', installation: 0, cluster: 0 }),
        // No Redis here: the wait is planned from the listed Jobs, as a step without its lease read does.
        clusterLease: async () => 'unknown' as const,
      },
      clock: systemClock,
      config: { runnerImage: '(the installation runner image)', maxActiveJobs: 1, clusterMaxActiveJobs: 1 },
    },
    refOf(caller, target),
  );
  out([
    `next step: ${outcome.action} (${outcome.reason})${lookedAtAgain(outcome.reason, outcome.requeueAfterSeconds)}`,
    ...(outcome.message ? [`  ${outcome.message}`] : []),
    '  (read only: the same reads and decision as the controller step; Job slots assumed free)',
  ]);
}

/**
 * When the controller looks again, as `why` can tell it: a safety-net wait's requeue is the table's for
 * each read of the controller's own step (src/core/safety-requeue.ts), which this read-only step does not
 * repeat, so it is said per read.
 */
function lookedAtAgain(reason: string, seconds: number | undefined): string {
  if (seconds === undefined) return '';
  return isSafetyNetWait(reason) ? `, ${safetyRequeueText(seconds)}` : `, looked at again in ${seconds} s`;
}

/**
 * The object's pending plan (`status.pendingPlanRef`). With a digest, a plan of the object with that digest
 * is found even once it is no longer pending (approved and applied meanwhile), so `approve` says so.
 */
async function pendingPlan(caller: Caller, target: PluginTarget, digest?: string): Promise<TerraformPlan> {
  const object = await readTarget(caller, target);
  const name = object.status?.pendingPlanRef?.name;
  if (!name && digest !== undefined) {
    const plans = await caller.reader.listCustomObjects('TerraformPlan', {
      namespace: caller.namespace,
      labelSelector: { [LABELS.ownerUid]: object.metadata.uid },
    });
    const bound = (plans as unknown as TerraformPlan[]).find((p) => p.spec.digest === digest);
    if (bound) return bound;
  }
  if (!name) throw new Refusal(`${target.kind} ${caller.namespace}/${target.name} has no pending plan`);
  const plan = await caller.reader.getCustomObject('TerraformPlan', caller.namespace, name);
  if (!plan) throw new Refusal(`TerraformPlan ${caller.namespace}/${name} not found`);
  return plan as unknown as TerraformPlan;
}

async function plan(caller: Caller, target: PluginTarget): Promise<void> {
  const found = await pendingPlan(caller, target);
  out([
    ...planLines(found),
    '',
    found.spec.approved
      ? 'approved; the next apply runs this plan'
      : `approve: kubectl captf approve ${target.kind.toLowerCase()}/${target.name} -n ${caller.namespace} --digest ${found.spec.digest}`,
  ]);
}

/** The caller's user name, as `kubectl auth whoami` answers it (SelfSubjectReview). */
async function whoami(caller: Caller): Promise<string> {
  try {
    const review = await caller.apis.authentication.createSelfSubjectReview({
      body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
    });
    const name = review.status?.userInfo?.username;
    if (!name) throw new Refusal('the API server names no user for these credentials');
    return name;
  } catch (error) {
    if (error instanceof Refusal) throw error;
    throw toKubeError(error, 'who am I (SelfSubjectReview)');
  }
}

async function approve(caller: Caller, target: PluginTarget, digest: string | undefined): Promise<void> {
  const found = await pendingPlan(caller, target, digest);
  const name = found.metadata.name;
  if (digest !== undefined && digest !== found.spec.digest)
    throw new Refusal(
      `TerraformPlan ${name} has digest ${found.spec.digest}, not ${digest}: the pending plan is not the one you read`,
    );
  if (found.spec.approved) {
    out(
      `TerraformPlan ${name} is already approved by ${found.spec.approvedBy ?? '?'} (phase ${found.status?.phase ?? 'Pending'})`,
    );
    return;
  }
  const user = await whoami(caller);
  // Bound to the digest read (or named): the patch fails if the plan object holds another.
  const patch = [
    { op: 'test', path: '/spec/digest', value: digest ?? found.spec.digest },
    { op: 'add', path: '/spec/approved', value: true },
    { op: 'add', path: '/spec/approvedBy', value: user },
  ];
  try {
    await caller.apis.custom.patchNamespacedCustomObject(
      { ...CUSTOM_RESOURCES.TerraformPlan, namespace: caller.namespace, name, body: patch },
      setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
    );
  } catch (error) {
    throw new Refusal(
      toKubeError(error, `approve TerraformPlan ${caller.namespace}/${name} as ${user}`).message,
    );
  }
  out(`approved TerraformPlan ${name} (digest ${found.spec.digest}) as ${user}`);
}

async function history(caller: Caller, target: PluginTarget) {
  const object = await readTarget(caller, target);
  const owner = { [LABELS.ownerUid]: object.metadata.uid };
  const [jobs, secrets] = await Promise.all([
    caller.reader.listJobs({ namespace: caller.namespace, labelSelector: owner }),
    caller.reader
      .listSecrets({
        namespace: caller.namespace,
        labelSelector: { ...owner, [LABELS.runLog]: 'true' },
      })
      .catch((error: unknown) => {
        // Without the right to list Secrets the history still shows the Jobs; the logs say why.
        if (isKubeError(error, 'Forbidden')) return [];
        throw error;
      }),
  ]);
  // Only metadata is passed on: the history never holds log text.
  const logs = secrets.map((secret) => ({
    metadata: {
      name: secret.metadata?.name ?? '',
      labels: secret.metadata?.labels ?? {},
      annotations: secret.metadata?.annotations ?? {},
      ...(secret.metadata?.creationTimestamp ? { creationTimestamp: secret.metadata.creationTimestamp } : {}),
    },
  }));
  return runHistory(jobs as Parameters<typeof runHistory>[0], logs, object.status?.lastRun);
}

async function runs(caller: Caller, target: PluginTarget): Promise<void> {
  const rows = await history(caller, target);
  out(rows.length === 0 ? 'no runs' : runTable(rows));
}

async function logs(caller: Caller, target: PluginTarget, op?: string, attempt?: number): Promise<void> {
  const run = pickRun(await history(caller, target), op, attempt);
  if (!run)
    throw new Refusal(
      `no run${op ? ` of op ${op}` : ''}${attempt ? ` with attempt ${attempt}` : ''} of ${target.kind} ${caller.namespace}/${target.name}`,
    );
  if (run.jobExists) {
    const pods = await caller.reader.listPods({
      namespace: caller.namespace,
      labelSelector: { 'batch.kubernetes.io/job-name': run.job },
    });
    const newest = pods.sort(
      (a, b) =>
        (b.metadata?.creationTimestamp?.valueOf() ?? 0) - (a.metadata?.creationTimestamp?.valueOf() ?? 0),
    )[0];
    const podName = newest?.metadata?.name;
    const text =
      podName === undefined
        ? undefined
        : await caller.reader.readPodLog(caller.namespace, podName, SOURCE_CONTAINER, 100_000);
    if (text !== undefined && podName !== undefined) {
      out(`# log of ${run.job} (pod ${podName}, live)`);
      process.stdout.write(text.endsWith('\n') || text === '' ? text : `${text}\n`);
      return;
    }
  }
  const secret = await caller.reader.getSecret(caller.namespace, runLogSecretName(run.job));
  // Only a run-log Secret is printed: a Secret of another type under that name is not a log.
  const data = secret?.type === RUN_LOG_SECRET_TYPE ? secret.data?.[RUN_LOG_KEY] : undefined;
  if (!secret || data === undefined)
    throw new Refusal(`the log of ${run.job} is gone: its pod no longer exists and no run log was kept`);
  out(runLogHeader(run.job, secret.metadata?.annotations ?? {}));
  const text = Buffer.from(data, 'base64').toString('utf8');
  process.stdout.write(text.endsWith('\n') || text === '' ? text : `${text}\n`);
}

async function unlock(caller: Caller, target: PluginTarget, lockId: string | undefined): Promise<void> {
  const snapshot = await readSnapshot(caller.reader, refOf(caller, target));
  if (!snapshot) throw new Refusal(`${target.kind} ${caller.namespace}/${target.name} not found`);
  const where = stateObjectsOf(snapshot);
  const lease = where ? await caller.reader.getLease(where.namespace, where.lockLease) : undefined;
  const lockInfo = lease?.metadata?.annotations?.[LOCK_INFO_ANNOTATION];
  const pods = await readPods(caller.reader, snapshot);
  const who = lockInfo ? (JSON.parse(lockInfo) as { Who?: string }).Who : undefined;
  const host = who?.slice(who.lastIndexOf('@') + 1);
  const holder = host ? await caller.reader.getPod(caller.namespace, host) : undefined;
  const decision = decideUnlock({
    leaseName: where?.lockLease,
    lease: lease
      ? {
          ...(lease.spec?.holderIdentity ? { holderIdentity: lease.spec.holderIdentity } : {}),
          ...(lockInfo ? { lockInfo } : {}),
        }
      : undefined,
    ...(snapshot.status.activeJob?.name ? { activeJob: snapshot.status.activeJob.name } : {}),
    ownJobNames: snapshot.jobs.map((job) => job.metadata.name),
    pods,
    holderPod: holder ? asPodView(holder) : undefined,
    ...(lockId === undefined ? {} : { lockId }),
  });
  if (decision.kind === 'nothing') {
    out(decision.message);
    return;
  }
  if (decision.kind === 'refuse') throw new Refusal(`not unlocked: ${decision.message}`);
  try {
    await caller.apis.coordination.patchNamespacedLease(
      {
        namespace: where?.namespace ?? caller.namespace,
        name: decision.leaseName,
        body: unlockPatch(decision.lock.id, lockInfo !== undefined),
      },
      setHeaderOptions('Content-Type', PatchStrategy.JsonPatch),
    );
  } catch (error) {
    throw new Refusal(`not unlocked: ${toKubeError(error, `patch Lease ${decision.leaseName}`).message}`);
  }
  out(
    `unlocked ${describeLock(decision.lock)}: Lease ${decision.leaseName}; the next retry of the object takes the lock`,
  );
}

async function run(command: Extract<PluginCommand, { kind: 'run' }>): Promise<void> {
  const caller = connect(command.connection);
  const target = command.target;
  if (command.verb === 'status') return status(caller);
  if (target === undefined) throw new Refusal(`${command.verb} needs KIND/NAME`);
  switch (command.verb) {
    case 'why':
      return why(caller, target);
    case 'plan':
      return plan(caller, target);
    case 'approve':
      return approve(caller, target, command.digest);
    case 'logs':
      return logs(caller, target, command.op, command.attempt);
    case 'runs':
      return runs(caller, target);
    case 'unlock':
      return unlock(caller, target, command.lockId);
  }
}

/** Runs the plugin on `argv` (after `kubectl captf`); answers the exit code. */
export async function main(argv: readonly string[]): Promise<number> {
  let command: PluginCommand;
  try {
    command = parsePluginArgs(argv);
  } catch (error) {
    process.stderr.write(`error: ${(error as Error).message}\n\n${pluginUsage()}\n`);
    return 2;
  }
  if (command.kind === 'help') {
    out(pluginUsage());
    return 0;
  }
  try {
    await run(command);
    return 0;
  } catch (error) {
    // A refusal, an API answer or an unusable kubeconfig: the message is the answer.
    if (!(error instanceof Error)) throw error;
    process.stderr.write(`error: ${error.message}\n`);
    return 1;
  }
}
