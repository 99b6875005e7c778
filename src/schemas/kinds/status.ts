import { z } from 'zod';
import { OpSchema, StepNameSchema } from '../result.ts';
import { ConditionsSchema } from './condition.ts';
import { WaitReasonSchema } from './wait-reason.ts';

/** Status fields every target kind shares (DESIGN.md section 2). */

const TimeSchema = z.iso.datetime();

/**
 * Error kinds in `lastRun.error.kind`, the Failing Jobs runbook's values (DESIGN.md section 7): the runner's
 * own (`step`, `image-layout`, `state-decryption`: no configured passphrase opens the state), the run's other ends (`interrupted`, also for a deadline kill the runner
 * caught; `blocked`; `plan-changed`), and `unknown` where no readable result exists. The condition reason
 * carries the rest (`ImagePullFailed`, `JobDeadlineExceeded`, …).
 */
export const RUN_ERROR_KINDS = [
  'step',
  'image-layout',
  'state-decryption',
  'interrupted',
  'blocked',
  'plan-changed',
  'unknown',
] as const;
export const RunErrorKindSchema = z.enum(RUN_ERROR_KINDS);
export type RunErrorKind = z.infer<typeof RunErrorKindSchema>;

/** `lastRun.result` (DESIGN.md section 7): plan-changed runs are recorded as `blocked`. */
export const RECORDED_RESULTS = ['succeeded', 'failed', 'interrupted', 'blocked'] as const;
export const RecordedResultSchema = z.enum(RECORDED_RESULTS);
export type RecordedResult = z.infer<typeof RecordedResultSchema>;

export const ActiveJobSchema = z
  .object({
    name: z.string(),
    op: OpSchema,
    attempt: z.number().int().min(1),
    startedAt: TimeSchema,
  })
  .describe('The Job that runs now.');
export type ActiveJob = z.infer<typeof ActiveJobSchema>;

export const LastRunSchema = z
  .object({
    job: z.string(),
    op: OpSchema,
    attempt: z.number().int().min(1),
    generation: z.number().int().min(0).describe('The generation the run was started for.'),
    inputsHash: z.string().describe('The inputs hash the run was started with.'),
    startedAt: TimeSchema,
    finishedAt: TimeSchema,
    result: RecordedResultSchema,
    reason: z.string().describe('Condition reason of the run, e.g. ApplySucceeded or JobDeadlineExceeded.'),
    error: z
      .object({
        kind: RunErrorKindSchema,
        step: StepNameSchema.optional(),
        summary: z.string().max(1024).describe('Curated and redacted; never raw Terraform output.'),
      })
      .optional(),
    steps: z
      .array(z.object({ name: StepNameSchema, exit: z.number().int(), seconds: z.number().min(0) }))
      .max(16)
      .optional(),
    plan: z
      .object({
        digest: z.string(),
        add: z.number().int().min(0),
        change: z.number().int().min(0),
        destroy: z.number().int().min(0),
      })
      .optional(),
    drift: z
      .object({
        detected: z.boolean(),
        add: z.number().int().min(0).optional(),
        change: z.number().int().min(0).optional(),
        destroy: z.number().int().min(0).optional(),
      })
      .optional(),
    warnings: z
      .array(z.string())
      .max(8)
      .optional()
      .describe('DeadlineRace, RunnerContractViolation, ExtraPod: the evidence disagreed.'),
  })
  .describe('The newest bookkept run.');
export type LastRun = z.infer<typeof LastRunSchema>;

export const LastSuccessSchema = z
  .object({
    apply: TimeSchema.optional(),
    destroy: TimeSchema.optional(),
    drift: TimeSchema.optional(),
    refresh: TimeSchema.optional(),
  })
  .describe('When each op last finished successfully.');
export type LastSuccess = z.infer<typeof LastSuccessSchema>;

/** One op's retry accounting (DESIGN.md sections 4 and 9), kept so no Job deletion erases it. */
export const OpAttemptsSchema = z
  .object({
    last: z.number().int().min(0).describe('The highest attempt started; a Job name is never used twice.'),
    recorded: z.number().int().min(0).describe('The highest attempt whose run is counted below.'),
    newest: z.string().max(64).optional().describe('How the newest recorded run ended (its evidence).'),
    failures: z.number().int().min(0).describe('Counted failures since the newest success.'),
    interruptions: z.number().int().min(0).describe('Interruptions (not deadline kills) in a row.'),
    lockContentions: z
      .number()
      .int()
      .min(0)
      .describe('Runs in a row that found the state lock held by a live pod of this object.'),
    failedAt: TimeSchema.optional().describe('Finish of the newest counted failure.'),
    interruptedAt: TimeSchema.optional().describe('Finish of the newest interruption in the row.'),
    lockContendedAt: TimeSchema.optional().describe('Finish of the newest lock contention in the row.'),
  })
  .describe('Attempts and retry accounting of one op.');
export type OpAttemptsStatus = z.infer<typeof OpAttemptsSchema>;

export const AttemptsSchema = z
  .object({
    apply: OpAttemptsSchema.optional(),
    destroy: OpAttemptsSchema.optional(),
    drift: OpAttemptsSchema.optional(),
    refresh: OpAttemptsSchema.optional(),
  })
  .describe(
    'Per op: the highest attempt started and the failures that decide the backoff (DESIGN.md section 4).',
  );
export type Attempts = z.infer<typeof AttemptsSchema>;

/** Fields of every target kind's status. */
export const commonStatusShape = {
  observedGeneration: z.number().int().min(0).optional(),
  conditions: ConditionsSchema.optional(),
  ready: z.boolean().optional().describe('Cluster API contract: the infrastructure is provisioned.'),
  initialization: z
    .object({ provisioned: z.boolean().optional() })
    .optional()
    .describe('Cluster API v1beta2 contract: the infrastructure is provisioned.'),
  activeJob: ActiveJobSchema.optional(),
  lastRun: LastRunSchema.optional(),
  waitReason: WaitReasonSchema.optional().describe('Why nothing is happening now.'),
  nextAttemptAt: TimeSchema.optional().describe(
    'When a wait with a natural end (backoff, a contended lock) ends; stable while its cause is.',
  ),
  lastSuccess: LastSuccessSchema.optional(),
  attempts: AttemptsSchema.optional(),
  appliedInputsHash: z.string().optional().describe('Inputs hash of the newest successful apply.'),
  appliedGeneration: z
    .number()
    .int()
    .min(0)
    .optional()
    .describe('Generation of the newest successful apply.'),
  pendingPlanRef: z
    .object({ name: z.string() })
    .optional()
    .describe('The TerraformPlan that waits for approval.'),
  source: z
    .object({ pinnedImage: z.string().optional().describe('The digest the newest successful apply ran.') })
    .optional(),
  outputs: z
    .object({
      secretName: z
        .string()
        .describe('The Secret the newest successful apply or refresh wrote the outputs to.'),
      names: z
        .array(z.string())
        .max(128)
        .optional()
        .describe(
          'Names of the module’s non-sensitive outputs, sorted (at most 128); values are only in the Secret, sensitive outputs not even by name.',
        ),
    })
    .optional()
    .describe('Where the module outputs are (spec.outputs.secretName).'),
  stateSuffix: z
    .string()
    .max(63)
    .optional()
    .describe(
      'The name of the object’s Terraform state (the kubernetes backend’s secret_suffix and the plan key’s), recorded when its first Job starts.',
    ),
};
