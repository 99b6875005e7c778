import { z } from 'zod';
import { CONTRACT_OUTPUT_NAMES, type ContractOutputName } from './contract-output-names.ts';

/**
 * The runner's result document (DESIGN.md section 10): JSON, `version: 1`, written to the termination log
 * and read once by bookkeeping. This schema is the one contract between the runner (writer) and the
 * controller (reader); both import it from here.
 */

/** Operations a Job can run (DESIGN.md section 3). */
export const OPS = ['apply', 'destroy', 'drift', 'refresh'] as const;
export const OpSchema = z.enum(OPS);
export type Op = z.infer<typeof OpSchema>;

/** Terraform's own words for the runner's steps (DESIGN.md section 10); `prepare` is the runner's setup. */
export const STEP_NAMES = [
  'prepare',
  'init',
  'force-unlock',
  'validate',
  'plan',
  'show-json',
  'apply',
  'destroy',
  'apply-refresh-only',
  // `tofu output -json` after an apply or refresh, when the spec names an outputs Secret (issue 24 item 3).
  'output',
] as const;
export const StepNameSchema = z.enum(STEP_NAMES);
export type StepName = z.infer<typeof StepNameSchema>;

/** What the runner says happened. `blocked` and `plan-changed` wait for an approval (DESIGN.md section 11). */
export const RUN_RESULTS = ['succeeded', 'failed', 'interrupted', 'blocked', 'plan-changed'] as const;
export const RunResultSchema = z.enum(RUN_RESULTS);
export type RunResult = z.infer<typeof RunResultSchema>;

/**
 * Error kinds the runner itself can report. `step`: a Terraform step failed; `image-layout`: the module
 * image breaks the image contract (missing `/captf/module` or a non-executable `/captf/runtime`);
 * `state-decryption`: the state or plan could not be decrypted (a wrong or missing passphrase, issue 25
 * item 3). The controller adds its own kinds (pull failure, deadline, unknown) when it classifies a Job.
 */
export const RUNNER_ERROR_KINDS = ['step', 'image-layout', 'state-decryption'] as const;
export const RunnerErrorKindSchema = z.enum(RUNNER_ERROR_KINDS);
export type RunnerErrorKind = z.infer<typeof RunnerErrorKindSchema>;

/** Largest result document in bytes: the kubelet's termination-message cap (DESIGN.md section 10). */
export const RESULT_MAX_BYTES = 4096;
/**
 * Deepest nesting of a result document that is read. The schema's own shapes are at most 4 deep, and the
 * outputs are taken as any value; a cap keeps a document of `[[[[…` (4096 bytes hold 2000 levels) from the
 * checks that walk the outputs (src/schemas/contract-outputs.ts: the exports' size check serialises them),
 * so reading stays a value, and the same value however deep the caller's stack.
 */
export const RESULT_MAX_DEPTH = 32;
/** Largest curated error summary in bytes (DESIGN.md section 10). */
export const SUMMARY_MAX_BYTES = 512;

export const StepRecordSchema = z.object({
  name: StepNameSchema,
  /** The step's process exit code; -1 when the process could not be started or was killed by a signal. */
  exit: z.number().int(),
  /** Wall time of the step in seconds, rounded to milliseconds. */
  seconds: z.number().nonnegative(),
});
export type StepRecord = z.infer<typeof StepRecordSchema>;

export const RunErrorSchema = z.object({
  kind: RunnerErrorKindSchema,
  step: StepNameSchema,
  /** Curated from Terraform's `-json` diagnostics, redacted, at most SUMMARY_MAX_BYTES bytes. */
  summary: z.string(),
  /**
   * Set when the failure has a reason of its own beyond its kind: `OutputsInvalid`, an output the Cluster
   * API contract fields would refuse (src/schemas/contract-outputs.ts); `ProviderIDChange`, a plan that
   * would change the providerID of a provisioned machine, and `ControlPlaneEndpointChange`, one that would
   * change the controlPlaneEndpoint of a Cluster API cluster (both refused before anything is applied).
   */
  reason: z.enum(['OutputsInvalid', 'ProviderIDChange', 'ControlPlaneEndpointChange']).optional(),
});
export type RunError = z.infer<typeof RunErrorSchema>;

export const PlanSummarySchema = z.object({
  /** `sha256:<hex>` over the HMAC'd canonical changes (DESIGN.md section 11). */
  digest: z.string(),
  add: z.number().int().nonnegative(),
  change: z.number().int().nonnegative(),
  destroy: z.number().int().nonnegative(),
  /** True when any change deletes or replaces a resource. */
  destructive: z.boolean().optional(),
});
export type PlanSummary = z.infer<typeof PlanSummarySchema>;

export const DriftSummarySchema = z.object({
  detected: z.boolean(),
  add: z.number().int().nonnegative().optional(),
  change: z.number().int().nonnegative().optional(),
  destroy: z.number().int().nonnegative().optional(),
});
export type DriftSummary = z.infer<typeof DriftSummarySchema>;

/** The state lock Terraform reported as held when a step failed to take it (DESIGN.md section 12). */
export const LockInfoSchema = z.object({
  id: z.string(),
  /** Terraform's `Who`: `user@host`, where host is the holder's pod name for our own Jobs. */
  who: z.string().optional(),
});
export type LockInfo = z.infer<typeof LockInfoSchema>;

/**
 * The Cluster API contract outputs as the result document carries them: any value (the document is parsed
 * JSON) under each contract name (src/schemas/contract-output-names.ts, the one list the runner reports
 * from), so a result whose outputs the CRD would refuse still parses and is classified (`OutputsInvalid`,
 * checked by src/schemas/contract-outputs.ts), never `unknown`. Built from that list: a name left out here
 * is stripped by the parse (a cluster's `exports` and `failureDomains` once never reached its status).
 */
export const ReportedOutputsSchema = z.object(
  Object.fromEntries(CONTRACT_OUTPUT_NAMES.map((name) => [name, z.unknown().optional()])) as Record<
    ContractOutputName,
    z.ZodOptional<z.ZodUnknown>
  >,
);
export type ReportedOutputs = z.infer<typeof ReportedOutputsSchema>;

/** Most output names a result and a status list (issue 24 item 3); a module with more lists the first. */
export const MAX_LISTED_OUTPUTS = 128;

/**
 * The outputs Secret the runner wrote (issue 24 item 3): its name and the names of the module's
 * non-sensitive outputs, sorted. Never a value, and never the name of a sensitive output.
 */
export const OutputsSecretWrittenSchema = z.object({
  name: z.string().min(1).max(253),
  outputs: z.array(z.string().max(256)).max(MAX_LISTED_OUTPUTS).optional(),
});
export type OutputsSecretWritten = z.infer<typeof OutputsSecretWrittenSchema>;

/**
 * The run's state Secret as the runner last saw it through its loopback proxy (the kubernetes backend's
 * own reads and writes, no request of its own; src/runner/kube-proxy.ts): the bytes of its data, decoded
 * (`captf_state_bytes`, DESIGN.md section 14), and whether it carries `clusterctl.cluster.x-k8s.io/move`
 * (bookkeeping adds the label when the object moves with its Cluster and this says it is missing). Absent
 * when the backend does not go through the proxy, or from a runner of an earlier release.
 */
export const StateReportSchema = z.object({
  bytes: z.number().int().nonnegative(),
  moveLabel: z.boolean(),
});
export type StateReport = z.infer<typeof StateReportSchema>;

export const RunnerResultSchema = z.object({
  version: z.literal(1),
  op: OpSchema,
  result: RunResultSchema,
  steps: z.array(StepRecordSchema),
  error: RunErrorSchema.optional(),
  plan: PlanSummarySchema.optional(),
  drift: DriftSummarySchema.optional(),
  lock: LockInfoSchema.optional(),
  /** The Cluster API contract outputs as reported (src/schemas/contract-outputs.ts checks them). */
  outputs: ReportedOutputsSchema.optional(),
  /** The outputs Secret this run wrote, when the spec names one. */
  outputsSecret: OutputsSecretWrittenSchema.optional(),
  /** The state Secret as the run left it, when the backend went through the runner's proxy. */
  state: StateReportSchema.optional(),
  /** The image digest the runner ran, when it can tell (used to pin `status.source.pinnedImage`). */
  imageDigest: z.string().optional(),
  /** Names of optional fields the runner dropped to fit RESULT_MAX_BYTES, in drop order. */
  dropped: z.array(z.string()).optional(),
});
export type RunnerResult = z.infer<typeof RunnerResultSchema>;

/** Outcome of reading a result document: a value, never a throw (STYLE.md habit 5). */
export type ParsedResult =
  | { ok: true; result: RunnerResult }
  | { ok: false; reason: 'missing' | 'truncated' | 'not-json' | 'invalid'; message: string };

/**
 * Parses the text of a termination message into a runner result.
 * `missing` for an empty text; `truncated` when the text reaches RESULT_MAX_BYTES and does not parse (the
 * kubelet cut it); `not-json` for other JSON errors; `invalid` when JSON does not match the schema.
 */
export function parseRunnerResult(text: string | undefined | null): ParsedResult {
  if (text === undefined || text === null || text.trim() === '') {
    return { ok: false, reason: 'missing', message: 'read runner result: no termination message' };
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    // The parser's message quotes the text, which may hold anything the pod printed (C15): say only how
    // long it was.
    const bytes = new TextEncoder().encode(text).length;
    const truncated = bytes >= RESULT_MAX_BYTES;
    return {
      ok: false,
      reason: truncated ? 'truncated' : 'not-json',
      message: `read runner result: ${truncated ? 'truncated at the termination-message cap' : 'not JSON'} (${bytes} bytes)`,
    };
  }
  if (depthExceeds(json, RESULT_MAX_DEPTH)) {
    return {
      ok: false,
      reason: 'invalid',
      message: `read runner result: nested deeper than ${RESULT_MAX_DEPTH} levels`,
    };
  }
  const parsed = RunnerResultSchema.safeParse(json);
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    return {
      ok: false,
      reason: 'invalid',
      message: `read runner result: ${first ? `${first.path.join('.') || '(root)'}: ${first.message}` : 'does not match version 1'}`,
    };
  }
  return { ok: true, result: parsed.data };
}

/** Whether a parsed JSON value nests arrays and objects deeper than `max`; iterative, so any depth is fine. */
function depthExceeds(value: unknown, max: number): boolean {
  const stack: Array<{ value: unknown; depth: number }> = [{ value, depth: 0 }];
  for (let item = stack.pop(); item !== undefined; item = stack.pop()) {
    if (typeof item.value !== 'object' || item.value === null) continue;
    const depth = item.depth + 1;
    if (depth > max) return true;
    for (const child of Object.values(item.value)) stack.push({ value: child, depth });
  }
  return false;
}
