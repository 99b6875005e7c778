import { z } from 'zod';
import { APPLY_POLICIES } from '../run-config.ts';
import { CronScheduleSchema } from './cron.ts';
import { type DurationBounds, durationSchema } from './duration.ts';
import { JobsPolicySchema } from './jobs-policy.ts';
import { driftIntervalOrSchedule, outputsSecretNotReserved, withRules } from './rules.ts';
import { StateEncryptionSchema } from './state-encryption.ts';

/**
 * The spec fields every target kind shares (DESIGN.md section 2). Kinds extend `commonSpecShape` with their
 * Cluster API contract fields.
 */

/** A Terraform variable name, as HCL identifiers go. */
export const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_-]*$/;

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

/**
 * 1m: a drift check is a Job (pod start, init, `plan`) that takes about a minute, so a shorter interval
 * queues checks back to back; 8760h: a year, the longest interval that still reads as periodic (turn the
 * check off with `enabled: false` instead).
 */
export const DRIFT_INTERVAL_BOUNDS: DurationBounds = {
  min: '1m',
  max: '8760h',
  why: 'a drift check is a Job that runs plan, about a minute; turn checks off with enabled: false',
};

/** 1m: a refresh is a Job running `apply -refresh-only`, as long as a drift check. */
export const REFRESH_INTERVAL_BOUNDS: DurationBounds = {
  min: '1m',
  max: '8760h',
  why: 'a refresh is a Job that runs apply -refresh-only, about a minute; leave refresh out for none',
};

export const DriftCheckSchema = withRules(
  z
    .object({
      enabled: z.boolean().default(true).describe('Run drift checks.'),
      interval: durationSchema(DRIFT_INTERVAL_BOUNDS)
        .optional()
        .describe(
          'Time between checks (default 30m when no schedule is set; 1m to 8760h: each check is a Job running `plan`, which takes about a minute, and a year is the longest that still means periodic).',
        ),
      schedule: CronScheduleSchema.optional().describe(
        'Cron schedule in UTC, instead of an interval: five numeric fields without leading zeros (each *, */step, a value, a range a-b or a list a,b) or a macro such as @daily; a day of month 30 or 31 needs month *.',
      ),
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
    interval: durationSchema(REFRESH_INTERVAL_BOUNDS)
      .optional()
      .describe(
        'Time between health refreshes (1m to 8760h: each refresh is a Job running `apply -refresh-only`, which takes about a minute); absent means no refresh.',
      ),
  })
  .describe('Periodic `apply -refresh-only` (health refresh).');
export type Refresh = z.infer<typeof RefreshSchema>;

/** A Secret name: a DNS-1123 subdomain (Kubernetes' rule for object names). */
export const SECRET_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

export const OutputsSchema = withRules(
  z
    .object({
      secretName: z
        .string()
        .min(1)
        .max(253)
        .regex(SECRET_NAME, { message: 'a Secret name: lower-case letters, digits, `-` and `.`' })
        .describe(
          "Secret in the object's namespace that every root output of the module (sensitive ones included) is written to after each successful apply and refresh: one key per output, strings as they are, other values as JSON. The controller creates it empty, owned by this object (deleted with it); a Secret of that name this object does not own stops its Jobs (WriteRefused). Not tfstate-… or captf-….",
        ),
    })
    .describe('Where the module outputs go; absent: they stay in the Terraform state.'),
  [outputsSecretNotReserved],
);
export type Outputs = z.infer<typeof OutputsSchema>;

/** Fields of every target kind's spec. */
export const commonSpecShape = {
  source: SourceSchema,
  variables: z
    .record(
      z.string().regex(VARIABLE_NAME, {
        message: 'variable names are letters, digits, `_` and `-`, not starting with a digit',
      }),
      z.unknown(),
    )
    .optional()
    .meta({
      'x-kubernetes-preserve-unknown-fields': true,
      description:
        'Terraform variables as JSON values, keyed by variable name (letters, digits, `_` and `-`, not starting with a digit). The controller checks the names; the API server cannot (CEL sees no keys of free-form JSON), so an object with another name is stored and waits SpecInvalid.',
    }),
  variablesFrom: z
    .array(VariableFromSchema)
    .max(256)
    .optional()
    .describe('Variables read from Secret keys into the per-run Secret.'),
  backend: BackendSchema.optional(),
  stateEncryption: StateEncryptionSchema.optional(),
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
  outputs: OutputsSchema.optional(),
};
