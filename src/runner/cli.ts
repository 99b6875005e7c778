import { parseArgs } from 'node:util';
import { z } from 'zod';
import {
  MODULE_DIR,
  RESULT_FILE,
  RUN_CONFIG_DIR,
  RUNNER_WORK_DIR,
  RUNTIME_PATH,
  SERVICE_ACCOUNT_DIR,
  STOP_TIMEOUT_SECONDS,
} from '../schemas/job-contract.ts';
import { OpSchema } from '../schemas/result.ts';
import { ApplyPolicySchema, PlanDigestSchema } from '../schemas/run-config.ts';
import type { RunOptions } from './run.ts';

/**
 * The runner's command line (DESIGN.md section 9):
 *   runner copy <dest>
 *   runner run --op=<apply|destroy|drift|refresh> [flags]
 * Flags of `run` (defaults in RUN_DEFAULTS; durations in whole seconds):
 *   --module-dir --runtime --config-dir --work-dir --result-file
 *   --lock-timeout --stop-timeout --expected-plan-digest --apply-policy --force-unlock-id
 *   --service-account-dir
 * `--service-account-dir` holds the pod's ServiceAccount token and CA, which the runner's loopback proxy
 * reaches the API server with for the in-cluster kubernetes backend (src/runner/kube-proxy.ts); the Job
 * passes it explicitly, so the local dev node can rewrite it. Of the others, the last four override the
 * run config's lockTimeoutSeconds, expectedPlanDigest, applyPolicy and forceUnlockId.
 */

/** Paths of the image contract (docs/image-contract.md) and the stop timeout (src/schemas/job-contract.ts). */
export const RUN_DEFAULTS = {
  moduleDir: MODULE_DIR,
  runtimePath: RUNTIME_PATH,
  configDir: RUN_CONFIG_DIR,
  /** An emptyDir the Job mounts: the module image may have no writable file system. */
  workDir: RUNNER_WORK_DIR,
  resultFile: RESULT_FILE,
  /** 540 s: grace 600 − 30 (section 10: the result is written before grace − 30 s) − 30 to write it. */
  stopTimeoutSeconds: STOP_TIMEOUT_SECONDS,
  /** Where the kubelet mounts the pod's ServiceAccount token and CA. */
  serviceAccountDir: SERVICE_ACCOUNT_DIR,
} as const;

/** A parsed command line. */
export type Command =
  | { command: 'copy'; dest: string }
  | { command: 'run'; options: RunOptions; resultFile: string }
  | { command: 'help' }
  | { command: 'usage-error'; message: string };

export const USAGE = `usage:
  runner copy <dest>
  runner run --op=<apply|destroy|drift|refresh> [--module-dir=${RUN_DEFAULTS.moduleDir}]
             [--runtime=${RUN_DEFAULTS.runtimePath}] [--config-dir=${RUN_DEFAULTS.configDir}]
             [--work-dir=${RUN_DEFAULTS.workDir}] [--result-file=${RUN_DEFAULTS.resultFile}]
             [--lock-timeout=<seconds>] [--stop-timeout=<seconds, default ${RUN_DEFAULTS.stopTimeoutSeconds}>]
             [--expected-plan-digest=sha256:<hex>] [--apply-policy=Automatic|Manual]
             [--force-unlock-id=<lock id>] [--service-account-dir=${RUN_DEFAULTS.serviceAccountDir}]
`;

const SecondsSchema = z.coerce.number().int().min(0).max(86_400);

const RunFlagsSchema = z.object({
  op: OpSchema,
  'module-dir': z.string().min(1).default(RUN_DEFAULTS.moduleDir),
  runtime: z.string().min(1).default(RUN_DEFAULTS.runtimePath),
  'config-dir': z.string().min(1).default(RUN_DEFAULTS.configDir),
  'work-dir': z.string().min(1).default(RUN_DEFAULTS.workDir),
  'result-file': z.string().min(1).default(RUN_DEFAULTS.resultFile),
  'lock-timeout': SecondsSchema.max(3600).optional(),
  'stop-timeout': SecondsSchema.default(RUN_DEFAULTS.stopTimeoutSeconds),
  'expected-plan-digest': PlanDigestSchema.optional(),
  'apply-policy': ApplyPolicySchema.optional(),
  'force-unlock-id': z.string().min(1).optional(),
  'service-account-dir': z.string().min(1).default(RUN_DEFAULTS.serviceAccountDir),
});

const RUN_FLAG_NAMES = Object.keys(RunFlagsSchema.shape) as (keyof typeof RunFlagsSchema.shape)[];

/** Parses `argv` (without the executable and script); never throws. */
export function parseCommandLine(argv: readonly string[]): Command {
  const [command, ...rest] = argv;
  if (command === undefined || command === 'help' || command === '--help') return { command: 'help' };
  if (command === 'copy') {
    const [dest, ...extra] = rest;
    if (dest === undefined || dest.startsWith('-') || extra.length > 0) {
      return { command: 'usage-error', message: 'copy takes exactly one destination' };
    }
    return { command: 'copy', dest };
  }
  if (command !== 'run') return { command: 'usage-error', message: `unknown command ${command}` };
  let values: Record<string, string | boolean | undefined>;
  try {
    const options = Object.fromEntries(RUN_FLAG_NAMES.map((name) => [name, { type: 'string' as const }]));
    values = parseArgs({ args: [...rest], options, strict: true, allowPositionals: false }).values;
  } catch (cause) {
    return { command: 'usage-error', message: (cause as Error).message };
  }
  const parsed = RunFlagsSchema.safeParse(values);
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    return {
      command: 'usage-error',
      message: `--${first?.path.join('.') ?? '?'}: ${first?.message ?? 'invalid'}`,
    };
  }
  const flags = parsed.data;
  const options: RunOptions = {
    op: flags.op,
    moduleDir: flags['module-dir'],
    runtimePath: flags.runtime,
    configDir: flags['config-dir'],
    workDir: flags['work-dir'],
    stopTimeoutSeconds: flags['stop-timeout'],
    serviceAccountDir: flags['service-account-dir'],
  };
  if (flags['lock-timeout'] !== undefined) options.lockTimeoutSeconds = flags['lock-timeout'];
  if (flags['expected-plan-digest'] !== undefined) options.expectedPlanDigest = flags['expected-plan-digest'];
  if (flags['apply-policy'] !== undefined) options.applyPolicy = flags['apply-policy'];
  if (flags['force-unlock-id'] !== undefined) options.forceUnlockId = flags['force-unlock-id'];
  return { command: 'run', options, resultFile: flags['result-file'] };
}
