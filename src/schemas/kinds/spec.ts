import { CronExpressionParser } from 'cron-parser';
import { z } from 'zod';
import { APPLY_POLICIES } from '../run-config.ts';
import { DurationSchema } from './duration.ts';
import { JobsPolicySchema } from './jobs-policy.ts';
import { driftIntervalOrSchedule, withRules } from './rules.ts';

/**
 * The spec fields every target kind shares (DESIGN.md section 2). Kinds extend `commonSpecShape` with their
 * Cluster API contract fields.
 */

/** A Terraform variable name, as HCL identifiers go. */
const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_-]*$/;

export const SourceSchema = z
  .object({
    image: z
      .string()
      .min(1)
      .max(1024)
      .describe('The module image (tag or digest) with /captf/module and /captf/runtime.'),
  })
  .describe('Where the module comes from.');

export const VariableFromSchema = z.object({
  name: z
    .string()
    .regex(VARIABLE_NAME, {
      message: 'variable names are letters, digits, `_` and `-`, not starting with a digit',
    })
    .describe('Terraform variable name.'),
  secretKeyRef: z
    .object({ name: z.string().min(1).max(253), key: z.string().min(1).max(253) })
    .describe('Secret key holding the value (JSON for non-string variables).'),
});
export type VariableFrom = z.infer<typeof VariableFromSchema>;

export const BackendSchema = z
  .object({
    type: z
      .string()
      .regex(/^[a-z][a-z0-9_]*$/)
      .default('kubernetes')
      .describe(
        'Backend type (default kubernetes: state in Secrets, lock in a Lease, suffix status.stateSuffix: <c|m|mp>-<name>).',
      ),
    config: z
      .record(z.string(), z.string())
      .optional()
      .describe('`-backend-config` key/values; absent means the kubernetes backend with state in Secrets.'),
    secretRef: z
      .object({ name: z.string().min(1).max(253) })
      .optional()
      .describe('Secret whose keys are passed as extra `-backend-config` key/values (credentials).'),
  })
  .describe('Backend configuration (DESIGN.md section 2).');
export type Backend = z.infer<typeof BackendSchema>;

export const DRIFT_ACTIONS = ['Report', 'Remediate'] as const;
export type DriftAction = (typeof DRIFT_ACTIONS)[number];

/** Drift checks run every 30 minutes when neither an interval nor a schedule is set (DESIGN.md section 2). */
export const DEFAULT_DRIFT_INTERVAL = '30m';

/** Five cron fields (minute to weekday) or a macro such as `@hourly`; cron-parser checks the details. */
const CRON_PATTERN = '^(@[a-z]+|(\\S+\\s+){4}\\S+)$';

export const CronScheduleSchema = z
  .string()
  .regex(new RegExp(CRON_PATTERN), { message: 'use five cron fields, e.g. "0 */6 * * *"' })
  .refine(
    (text) => {
      try {
        CronExpressionParser.parse(text, { tz: 'UTC' });
        return true;
      } catch {
        return false;
      }
    },
    { message: 'schedule is not a valid cron expression (five fields, UTC), e.g. "0 */6 * * *"' },
  );

export const DriftCheckSchema = withRules(
  z
    .object({
      enabled: z.boolean().default(true).describe('Run drift checks.'),
      interval: DurationSchema.optional().describe(
        'Time between checks (default 30m when no schedule is set).',
      ),
      schedule: CronScheduleSchema.optional().describe('Cron schedule in UTC, instead of an interval.'),
      action: z
        .enum(DRIFT_ACTIONS)
        .default('Report')
        .describe('Report: set DriftDetected. Remediate: also apply to bring the infrastructure back.'),
    })
    .describe('Periodic `plan -detailed-exitcode` to find drift.'),
  [driftIntervalOrSchedule],
);
export type DriftCheck = z.infer<typeof DriftCheckSchema>;

export const RefreshSchema = z
  .object({
    interval: DurationSchema.optional().describe('Time between health refreshes; absent means no refresh.'),
  })
  .describe('Periodic `apply -refresh-only` (health refresh).');
export type Refresh = z.infer<typeof RefreshSchema>;

/** Fields of every target kind's spec. */
export const commonSpecShape = {
  source: SourceSchema,
  variables: z.record(z.string().regex(VARIABLE_NAME), z.unknown()).optional().meta({
    'x-kubernetes-preserve-unknown-fields': true,
    description: 'Terraform variables as JSON values, keyed by variable name.',
  }),
  variablesFrom: z
    .array(VariableFromSchema)
    .max(256)
    .optional()
    .describe('Variables read from Secret keys into the per-run Secret.'),
  backend: BackendSchema.optional(),
  jobs: JobsPolicySchema.optional(),
  applyPolicy: z
    .enum(APPLY_POLICIES)
    .default('Automatic')
    .describe(
      'Automatic: a plan that deletes or replaces anything waits for approval. Manual: every plan does.',
    ),
  // prefault: an absent driftCheck still gets its defaults (enabled, Report, 30m), in zod and in the CRD.
  driftCheck: DriftCheckSchema.prefault({}),
  refresh: RefreshSchema.optional(),
};
