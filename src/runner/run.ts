import { writeFile } from 'node:fs/promises';
import { createRedactor, type Redactor } from '../core/redaction.ts';
import { buildRunLogSecret, type RunLogTarget } from '../core/run-log.ts';
import type {
  Op,
  OutputsSecretWritten,
  PlanSummary,
  RunError,
  RunnerResult,
  RunResult,
  StepName,
  StepRecord,
} from '../schemas/result.ts';
import type { ApplyPolicy } from '../schemas/run-config.ts';
import { backendAccess, proxiedBackend, proxyKubeconfig } from './backend-access.ts';
import { readContractOutputs } from './contract-outputs.ts';
import { decideGuard } from './guard.ts';
import type { Interruption } from './interruption.ts';
import { readPassphrases } from './key-secrets.ts';
import { type KubeProxy, startKubeProxy } from './kube-proxy.ts';
import { checkImageLayout } from './layout.ts';
import { lockInfoFrom } from './lock-info.ts';
import type { RunnerLog } from './log.ts';
import { jsonDocument, readUiStream, readValidateDocument, type UiReport, uiMessage } from './machine-ui.ts';
import { outputsSecretContent, readOutputsDocument } from './outputs-secret.ts';
import { writeOutputsSecret } from './outputs-secret-write.ts';
import { readPlanChanges } from './plan-changes.ts';
import { movesLatchedOutput, readPlanDocument, summarizePlan } from './plan-digest.ts';
import { fitResult } from './result-document.ts';
import { readRunConfig } from './run-config-file.ts';
import { writeRunLog } from './run-log-write.ts';
import { runConfigSecrets } from './run-secrets.ts';
import { registryTokens, runtimeEnv } from './runtime-env.ts';
import { secretReach } from './secret-reach.ts';
import { encryptionConfig, isDecryptionFailure } from './state-encryption.ts';
import { OP_STEPS, type StepCommand, type StepInputs, stepCommand, type TofuStep } from './steps.ts';
import { curateSummary } from './summary.ts';
import { runProcess } from './tofu-process.ts';
import { prepareWorkspace, proxyKubeconfigPath, type Workspace } from './workspace.ts';

/**
 * One `run --op=…` (DESIGN.md sections 10 to 12): prepare, then the op's steps in order, each timed and
 * recorded; the destructive guard between `show-json` and `apply`; a result document that is redacted and
 * fitted to the termination-message cap. The imperative shell around the pure parts in this directory.
 */

/** What the command line says; the flags override the run config's settings of the same name. */
export interface RunOptions {
  op: Op;
  moduleDir: string;
  runtimePath: string;
  configDir: string;
  workDir: string;
  lockTimeoutSeconds?: number;
  stopTimeoutSeconds: number;
  expectedPlanDigest?: string;
  applyPolicy?: ApplyPolicy;
  forceUnlockId?: string;
  /**
   * Holds the pod's ServiceAccount `token` and `ca.crt`: what the loopback proxy reaches the API server
   * with when the backend is the in-cluster kubernetes backend (src/runner/backend-access.ts).
   */
  serviceAccountDir: string;
}

/** What the run needs from its surroundings (STYLE.md habit 7: time and environment injected). */
export interface RunDeps {
  log: RunnerLog;
  interruption: Interruption;
  /** Monotonic milliseconds, for step timing. */
  nowMs: () => number;
  env: NodeJS.ProcessEnv;
}

/** How one runtime step ended, as the run sees it. */
type StepRun =
  | { kind: 'ok'; exit: number; ui: UiReport; stdout: string }
  | { kind: 'failed'; ui: UiReport; fallback: string; exit?: number }
  | { kind: 'not-started'; code: string }
  | { kind: 'interrupted' };

/**
 * Exit codes of a runtime that never ran: the C library runs a file the kernel refuses (wrong
 * architecture) through /bin/sh, which exits 126 (cannot execute) or 127 (not found). Terraform and
 * OpenTofu themselves exit 0, 1 or 2 only.
 */
const NOT_EXECUTED_EXITS: ReadonlySet<number> = new Set([126, 127]);

/** Errnos of a runtime that cannot be executed: the image breaks the contract (docs/image-contract.md). */
const IMAGE_LAYOUT_ERRNOS: ReadonlySet<string> = new Set([
  'ENOENT',
  'EACCES',
  'ENOEXEC',
  'EISDIR',
  'ENOTDIR',
]);

function round(seconds: number): number {
  return Math.round(seconds * 1000) / 1000;
}

/**
 * Runs the op and returns its result document, redacted and fitted; never throws for expected failures.
 * What the run starts (the loopback proxy) is stopped when it ends, however it ends; the runtime has exited
 * by then, an interrupted one too (it had the proxy to release its lock through). Last, once the run config
 * named it, the run log Secret is written, the result line in it.
 */
export async function runOp(options: RunOptions, deps: RunDeps): Promise<RunnerResult> {
  // Wall-clock time, kept on the run log: the history's start of a run whose Job is gone.
  const startedAt = new Date().toISOString();
  const setUp: SetUp = {};
  try {
    return await runSteps(options, deps, setUp);
  } finally {
    await setUp.proxy?.close();
    if (setUp.runLog !== undefined) await storeRunLog(setUp.runLog, startedAt, options, deps);
  }
}

/** What the run set up that runOp ends with it, however it ends. */
interface SetUp {
  proxy?: KubeProxy;
  /** Where the run's log goes, once the run config named it. */
  runLog?: RunLogTarget;
}

/**
 * Writes the run log Secret (src/core/run-log.ts) as the run's last act, its result line included. A
 * failed write changes no result: it is said in the pod log, and the run's outcome stays what it was.
 */
async function storeRunLog(
  target: RunLogTarget,
  startedAt: string,
  options: RunOptions,
  deps: RunDeps,
): Promise<void> {
  const secret = buildRunLogSecret(target, deps.log.written(), true, startedAt);
  const written = await writeRunLog(secret, options.serviceAccountDir, deps.env);
  if (written.ok) deps.log.info(`run log Secret ${target.name}: ${written.bytes} bytes written`);
  else deps.log.error(`run log not kept: ${written.message}`);
}

/** The run itself; records what it sets up in `setUp` at once, so runOp ends it on every path. */
async function runSteps(options: RunOptions, deps: RunDeps, setUp: SetUp): Promise<RunnerResult> {
  const { log, interruption, nowMs } = deps;
  const steps: StepRecord[] = [];
  let redactor: Redactor = createRedactor([]);

  const finish = (result: RunResult, extra: Partial<RunnerResult> = {}): RunnerResult => {
    // The state as the backend left it, seen through the proxy (no request of its own; DESIGN.md section 10).
    const state = setUp.proxy?.stateSeen();
    const doc: RunnerResult = {
      version: 1,
      op: options.op,
      result,
      steps,
      ...extra,
      ...(state ? { state } : {}),
    };
    // The summary is redacted where it is made; outputs and other structured fields are never redacted.
    const fitted = fitResult(doc);
    log.info(
      `result ${fitted.result}${fitted.error ? ` (${fitted.error.step}: ${fitted.error.summary})` : ''}`,
    );
    return fitted;
  };
  const failure = (
    kind: RunError['kind'],
    step: StepName,
    summary: string,
    extra: Partial<RunnerResult> = {},
    reason?: RunError['reason'],
  ) =>
    finish('failed', {
      ...extra,
      error: { kind, step, summary: curateSummary([], summary, redactor), ...(reason ? { reason } : {}) },
    });

  // prepare: the image-layout checks, the run config, the work dir.
  const prepareStarted = nowMs();
  const recordPrepare = (exit: number) =>
    steps.push({ name: 'prepare', exit, seconds: round((nowMs() - prepareStarted) / 1000) });
  const layout = await checkImageLayout(options.moduleDir, options.runtimePath);
  if (!layout.ok) {
    recordPrepare(1);
    return failure('image-layout', 'prepare', layout.summary);
  }
  const read = await readRunConfig(options.configDir);
  if (!read.ok) {
    recordPrepare(1);
    return failure('step', 'prepare', read.message);
  }
  // Every secret the run knows; sensitive outputs join it after the apply.
  const known = [...runConfigSecrets(read.config), ...registryTokens(deps.env)];
  redactor = createRedactor(known);
  log.useRedactor(redactor);
  if (read.config.runLog !== undefined) setUp.runLog = read.config.runLog;
  // State encryption (issue 25 item 3): the passphrases are read as the pod's ServiceAccount and handed to
  // the runtime in TF_ENCRYPTION only; the redactor knows them before anything could print them.
  let encryption: string | undefined;
  const encrypted = read.config.stateEncryption;
  if (encrypted !== undefined) {
    const keys = await readPassphrases(encrypted, options.serviceAccountDir, deps.env);
    if (!keys.ok) {
      recordPrepare(1);
      return failure('state-decryption', 'prepare', keys.message);
    }
    const fallback = keys.fallback;
    known.push(keys.passphrase.value);
    if (fallback !== undefined && fallback !== 'unencrypted') known.push(fallback.value);
    redactor = createRedactor(known);
    log.useRedactor(redactor);
    encryption = encryptionConfig(keys.passphrase, fallback);
  }
  // The in-cluster kubernetes backend goes through the loopback proxy (issue 16 item 3): the runtime gets a
  // kubeconfig naming it, written once the proxy listens and before the first step.
  const access = backendAccess(read.config.backend);
  const kubeconfigPath = proxyKubeconfigPath(options.workDir);
  const config =
    access.kind === 'proxied' && read.config.backend !== undefined
      ? { ...read.config, backend: proxiedBackend(read.config.backend, kubeconfigPath) }
      : read.config;
  let workspace: Workspace;
  try {
    workspace = await prepareWorkspace(options.moduleDir, options.workDir, config);
  } catch (cause) {
    recordPrepare(1);
    const code = (cause as NodeJS.ErrnoException).code ?? 'failed';
    return failure('step', 'prepare', `prepare work dir ${options.workDir}: ${code}`);
  }
  if (access.kind === 'proxied') {
    const started = await startKubeProxy({
      serviceAccountDir: options.serviceAccountDir,
      env: deps.env,
      scope: access.scope,
      log: (text) => log.error(text),
    });
    if (!started.ok) {
      recordPrepare(1);
      return failure('step', 'prepare', started.message);
    }
    setUp.proxy = started.proxy;
    try {
      await writeFile(kubeconfigPath, proxyKubeconfig(started.proxy.url, access.scope.namespace), {
        mode: 0o600,
      });
    } catch (cause) {
      recordPrepare(1);
      const code = (cause as NodeJS.ErrnoException).code ?? 'failed';
      return failure('step', 'prepare', `write kubeconfig ${kubeconfigPath}: ${code}`);
    }
    log.info(
      `kubernetes backend through ${started.proxy.url} as the service account of ${options.serviceAccountDir}`,
    );
  }
  recordPrepare(0);
  if (interruption.requested) return finish('interrupted');

  const inputs: StepInputs = {
    lockTimeoutSeconds: options.lockTimeoutSeconds ?? config.lockTimeoutSeconds,
    varFile: workspace.varFile,
    planFile: workspace.planFile,
  };
  if (workspace.backendConfigFile !== undefined) inputs.backendConfigFile = workspace.backendConfigFile;
  const forceUnlockId = options.forceUnlockId ?? config.forceUnlockId;
  if (forceUnlockId !== undefined) inputs.forceUnlockId = forceUnlockId;
  const env = runtimeEnv(deps.env, workspace.tmpDir, config.contractInputs, encryption);

  const execute = async (step: TofuStep): Promise<StepRun> => {
    const command = stepCommand(options.op, step, inputs);
    log.info(`step ${step}: ${command.args[0] ?? ''} started`);
    const started = nowMs();
    const end = await runProcess({
      file: options.runtimePath,
      args: command.args,
      cwd: workspace.moduleDir,
      env,
      onLine: (stream, line) => relayLine(log, step, command, stream, line),
      onStart: (child) => interruption.attach(child),
    });
    interruption.detach();
    const exit = end.kind === 'exited' ? end.exit : -1;
    const seconds = round((nowMs() - started) / 1000);
    steps.push({ name: step, exit, seconds });
    log.info(`step ${step}: exit ${exit} after ${seconds}s`);
    if (end.kind === 'not-started') return { kind: 'not-started', code: end.code };
    const ui = readOutput(command, end.stdout);
    const ok = end.kind === 'exited' && (command.okExits === 'all' || command.okExits.includes(end.exit));
    // A step that still finished its job despite a late interrupt counts; anything else is the interruption.
    if (interruption.requested && !ok) return { kind: 'interrupted' };
    if (ok) return { kind: 'ok', exit, ui, stdout: end.stdout };
    const fallback =
      end.kind === 'signaled'
        ? `${step} was killed by ${end.signal}`
        : `${step} exited ${exit} without diagnostics`;
    return { kind: 'failed', ui, fallback, ...(end.kind === 'exited' ? { exit: end.exit } : {}) };
  };

  /** Turns a step that did not succeed into the run's result. */
  const stopOn = (step: TofuStep, run: Exclude<StepRun, { kind: 'ok' }>, extra: Partial<RunnerResult>) => {
    switch (run.kind) {
      case 'interrupted':
        return finish('interrupted', extra);
      case 'not-started':
        return IMAGE_LAYOUT_ERRNOS.has(run.code)
          ? failure('image-layout', step, `start runtime ${options.runtimePath}: ${run.code}`, extra)
          : failure('step', step, `start runtime ${options.runtimePath}: ${run.code}`, extra);
      case 'failed': {
        if (run.ui.diagnostics.length === 0 && run.exit !== undefined && NOT_EXECUTED_EXITS.has(run.exit)) {
          return failure(
            'image-layout',
            step,
            `runtime ${options.runtimePath} could not be executed (exit ${run.exit})`,
            extra,
          );
        }
        const lock = lockInfoFrom(run.ui.diagnostics);
        const summary = curateSummary(run.ui.diagnostics, run.fallback, redactor);
        const kind = isDecryptionFailure(run.ui.diagnostics) ? 'state-decryption' : 'step';
        return finish('failed', {
          ...extra,
          ...(lock ? { lock } : {}),
          error: { kind, step, summary },
        });
      }
    }
  };

  /**
   * `output` after a successful apply or refresh (issue 24 item 3): every root output into the outputs
   * Secret. Its sensitive values join the redactor first, so nothing the runner prints after carries them.
   */
  const writeOutputs = async (
    target: NonNullable<typeof config.outputsSecret>,
  ): Promise<
    | { ok: true; reported: OutputsSecretWritten }
    | { ok: false; message: string }
    | { ok: false; interrupted: true }
  > => {
    if (interruption.requested) return { ok: false, interrupted: true };
    const run = await execute('output');
    if (run.kind === 'interrupted') return { ok: false, interrupted: true };
    if (run.kind === 'failed')
      return { ok: false, message: curateSummary(run.ui.diagnostics, run.fallback, redactor) };
    if (run.kind === 'not-started')
      return { ok: false, message: `start runtime ${options.runtimePath}: ${run.code}` };
    const document = readOutputsDocument(run.stdout);
    if (!document.ok) return { ok: false, message: document.message };
    const content = outputsSecretContent(document.outputs);
    // Added to what the redactor knew, so passphrases and registry tokens stay hidden after the outputs.
    redactor = createRedactor([...known, ...content.secrets]);
    log.useRedactor(redactor);
    if (content.unfit.length > 0)
      return { ok: false, message: `no Secret key can name output ${content.unfit.join(', ')}` };
    const written = await writeOutputsSecret(
      { ...target, serviceAccountDir: options.serviceAccountDir, env: deps.env },
      content.data,
    );
    if (!written.ok) return written;
    log.info(
      `outputs Secret ${target.name}: ${Object.keys(content.data).length} outputs, ${content.listed.length} not sensitive, ${written.bytes > 0 ? `${written.bytes} bytes written` : 'unchanged, not written'}`,
    );
    return { ok: true, reported: { name: target.name, outputs: content.listed } };
  };

  let plan: PlanSummary | undefined;
  for (const step of OP_STEPS[options.op]) {
    if (step === 'force-unlock' && inputs.forceUnlockId === undefined) continue;
    if (interruption.requested) return finish('interrupted', plan ? { plan } : {});
    const run = await execute(step);
    if (run.kind !== 'ok') return stopOn(step, run, plan ? { plan } : {});

    if (step === 'show-json') {
      const parsed = readPlanDocument(run.stdout);
      if (!parsed.ok) return failure('step', step, parsed.message);
      plan = summarizePlan(parsed.changes, config.planHmacKey);
      if (config.providerID !== undefined && movesLatchedOutput(parsed, 'providerID', config.providerID)) {
        return failure(
          'step',
          step,
          `the plan would change the providerID of this provisioned machine (${config.providerID}); Cluster API replaces Machines and never re-identifies one: roll out a new Machine instead (a new template for its MachineDeployment or MachineSet)`,
          { plan },
          'ProviderIDChange',
        );
      }
      if (
        config.controlPlaneEndpoint !== undefined &&
        movesLatchedOutput(parsed, 'controlPlaneEndpoint', config.controlPlaneEndpoint)
      ) {
        const { host, port } = config.controlPlaneEndpoint;
        return failure(
          'step',
          step,
          `the plan would change the controlPlaneEndpoint of this cluster (${host}:${port}); Cluster API copies it into the Cluster once and never again: keep the endpoint (a stable address in front of the control plane), or create a new Cluster`,
          { plan },
          'ControlPlaneEndpointChange',
        );
      }
      const expectedDigest = options.expectedPlanDigest ?? config.expectedPlanDigest;
      const decision = decideGuard({
        plan,
        changeCount: parsed.changes.length,
        policy: options.applyPolicy ?? config.applyPolicy,
        ...(expectedDigest !== undefined ? { expectedDigest } : {}),
      });
      log.info(
        `plan ${plan.digest}: +${plan.add} ~${plan.change} -${plan.destroy}: ${decision.kind} (${decision.reason})`,
      );
      if (decision.kind !== 'apply') {
        // A plan that waits for approval: the readable plan for its TerraformPlan, in the log (issue 24).
        const doc = jsonDocument(run.stdout);
        const secretVariables = [...config.secretInputs, ...config.sensitiveContractInputs];
        const readable = readPlanChanges(doc, redactor, secretReach(doc, secretVariables));
        if (readable.ok) log.planChanges(JSON.stringify(readable.changes));
        else log.error(readable.message);
        return finish(decision.kind, { plan });
      }
    }
    if (options.op === 'drift' && step === 'plan') {
      const changes = run.ui.changes;
      const drift =
        run.exit === 2
          ? {
              detected: true,
              add: changes?.add ?? 0,
              change: changes?.change ?? 0,
              destroy: changes?.remove ?? 0,
            }
          : { detected: false };
      return finish('succeeded', { drift });
    }
    if (step === 'apply' || step === 'apply-refresh-only') {
      const contract = readContractOutputs(run.ui.outputs, config.kind);
      if (contract.rejected.length > 0) {
        // The apply is done, but the object could never record these outputs (DESIGN.md section 7).
        return failure(
          'step',
          step,
          `the Cluster API contract refuses output ${contract.rejected.join(', ')}`,
          { ...(plan ? { plan } : {}) },
          'OutputsInvalid',
        );
      }
      const outputs = Object.keys(contract.outputs).length > 0 ? { outputs: contract.outputs } : {};
      const applied = { ...(plan ? { plan } : {}), ...outputs };
      if (config.outputsSecret === undefined) return finish('succeeded', applied);
      const written = await writeOutputs(config.outputsSecret);
      // Interrupted after the apply: the retry re-plans to no changes and writes the Secret then.
      if (!written.ok && 'interrupted' in written) return finish('interrupted', applied);
      if (!written.ok) return failure('step', 'output', written.message, applied);
      return finish('succeeded', { ...applied, outputsSecret: written.reported });
    }
  }
  return finish('succeeded');
}

function readOutput(command: StepCommand, stdout: string): UiReport {
  switch (command.output) {
    case 'ui-stream':
      return readUiStream(stdout.split('\n'));
    case 'validate-document':
      return readValidateDocument(stdout);
    case 'plan-document':
    case 'outputs-document':
    case 'text':
      return { diagnostics: [] };
  }
}

/** Shows a runtime line in the runner's log: UI messages as text; plan and validate documents not at all. */
function relayLine(
  log: RunnerLog,
  step: TofuStep,
  command: StepCommand,
  stream: 'stdout' | 'stderr',
  line: string,
): void {
  if (stream === 'stderr' || command.output === 'text') {
    log.relay(step, stream, line);
    return;
  }
  if (command.output !== 'ui-stream') return;
  const message = uiMessage(line);
  if (message !== undefined) log.relay(step, stream, message);
}
