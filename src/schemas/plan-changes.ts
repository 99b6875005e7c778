import { z } from 'zod';

/**
 * The readable plan (issue 24 item 1, DESIGN.md section 11): what an approver reads in a TerraformPlan,
 * made by the runner from `show -json` (src/runner/plan-changes.ts) and carried to the controller in the
 * Job's log (src/schemas/plan-changes-log.ts). Attribute *paths* only, never values: a value marked
 * sensitive by OpenTofu, a variable read from a Secret or the bootstrap data cannot be in it; an instance
 * or map key that holds a Secret's value is masked as OpenTofu masks values, `(sensitive value)`.
 *
 * The bound (DESIGN.md section 11): at most PLAN_CHANGES_MAX_RESOURCES resource changes and
 * PLAN_CHANGES_MAX_BYTES bytes of JSON for the whole `changes` field, deletes and replaces first; the
 * counts are always exact, so a cut plan says how much it left out.
 */

/**
 * OpenTofu's own words for a change (its `show -json` action lists and `plan` text): `create`, `update`
 * (in place), `delete`, `replace` (`["delete","create"]` or create-before-destroy `["create","delete"]`),
 * `read` (a data source read during apply) and `forget` (a `removed` block that keeps the object).
 */
export const PLAN_CHANGE_ACTIONS = ['create', 'update', 'delete', 'replace', 'read', 'forget'] as const;
export const PlanChangeActionSchema = z.enum(PLAN_CHANGE_ACTIONS);
export type PlanChangeAction = z.infer<typeof PlanChangeActionSchema>;

/** The actions an approver must look at twice: they destroy an existing object. */
export const DESTRUCTIVE_ACTIONS: ReadonlySet<PlanChangeAction> = new Set(['delete', 'replace']);

/** Most resource changes a TerraformPlan lists; the rest are counted only. */
export const PLAN_CHANGES_MAX_RESOURCES = 1000;
/**
 * Most bytes of JSON the whole `changes` field takes (128 KiB): a tenth of etcd's 1.5 MiB request limit,
 * so the rest of the object (metadata, managedFields, status: under 16 KiB) always fits; half of the
 * API server's 256 KiB cap on all annotations, so even a `kubectl apply` of the plan (which copies it into
 * `last-applied-configuration`) is accepted; and every step of a waiting object reads its pending plan.
 */
export const PLAN_CHANGES_MAX_BYTES = 128 * 1024;
/** Most destructive addresses listed on their own (the `kubectl get -o wide` column, notifiers). */
export const PLAN_CHANGES_MAX_DESTRUCTIVE = 20;
/** Most attribute paths listed per resource change; `morePaths` counts the rest. */
export const PLAN_CHANGES_MAX_PATHS = 16;
/** Longest resource address kept (characters); longer ones are cut and end in `…`. */
export const PLAN_CHANGES_MAX_ADDRESS = 512;
/** Longest attribute path kept (characters); longer ones are cut and end in `…`. */
export const PLAN_CHANGES_MAX_PATH = 256;
/** Most output changes listed. */
export const PLAN_CHANGES_MAX_OUTPUTS = 100;

/** What replaces a Secret's value where a key would show it, in OpenTofu's own words. */
export const SENSITIVE_MASK = '(sensitive value)';

export const PlanResourceChangeSchema = z
  .object({
    address: z
      .string()
      .min(1)
      .max(PLAN_CHANGES_MAX_ADDRESS)
      .describe('Resource instance address, with " (deposed <key>)" for a deposed object.'),
    action: PlanChangeActionSchema.describe(
      "OpenTofu's word for the change: create, update, delete, replace, read, forget.",
    ),
    reason: z
      .string()
      .max(64)
      .optional()
      .describe("OpenTofu's action_reason, e.g. replace_because_cannot_update, delete_because_count_index."),
    paths: z
      .array(z.string().max(PLAN_CHANGES_MAX_PATH))
      .max(PLAN_CHANGES_MAX_PATHS)
      .optional()
      .describe('Attribute paths an update or replace changes (paths only, never values).'),
    replacePaths: z
      .array(z.string().max(PLAN_CHANGES_MAX_PATH))
      .max(PLAN_CHANGES_MAX_PATHS)
      .optional()
      .describe("Attribute paths that force the replacement (OpenTofu's replace_paths)."),
    morePaths: z.number().int().min(0).optional().describe('Changed paths left out of paths.'),
  })
  .describe('One resource change.');
export type PlanResourceChange = z.infer<typeof PlanResourceChangeSchema>;

export const PlanOutputChangeSchema = z
  .object({
    name: z.string().min(1).max(256),
    action: PlanChangeActionSchema,
  })
  .describe('One root output the plan changes (its value is never shown).');
export type PlanOutputChange = z.infer<typeof PlanOutputChangeSchema>;

export const PlanChangeCountsSchema = z
  .object({
    resources: z.number().int().min(0).describe('Resource changes in the plan (no-op excluded).'),
    create: z.number().int().min(0),
    update: z.number().int().min(0),
    delete: z.number().int().min(0),
    replace: z.number().int().min(0),
    read: z.number().int().min(0),
    forget: z.number().int().min(0),
    outputs: z.number().int().min(0).describe('Root outputs the plan changes.'),
  })
  .describe('Exact counts by action, whatever the bound left out.');
export type PlanChangeCounts = z.infer<typeof PlanChangeCountsSchema>;

export const PlanChangesSchema = z
  .object({
    resources: z
      .array(PlanResourceChangeSchema)
      .max(PLAN_CHANGES_MAX_RESOURCES)
      .describe(
        `Resource changes, deletes and replaces first, then in OpenTofu's order; at most ${PLAN_CHANGES_MAX_RESOURCES} and ${PLAN_CHANGES_MAX_BYTES / 1024} KiB for this whole field (a tenth of etcd's 1.5 MiB request limit, half the 256 KiB annotation cap a kubectl apply copies it into): a larger plan keeps the first and counts the rest (omittedResources).`,
      ),
    omittedResources: z.number().int().min(0).describe('Resource changes the bound left out of resources.'),
    destructive: z
      .array(z.string().max(PLAN_CHANGES_MAX_ADDRESS))
      .max(PLAN_CHANGES_MAX_DESTRUCTIVE)
      .describe(`Addresses the plan deletes or replaces (the first ${PLAN_CHANGES_MAX_DESTRUCTIVE}).`),
    outputs: z.array(PlanOutputChangeSchema).max(PLAN_CHANGES_MAX_OUTPUTS).describe('Root output changes.'),
    counts: PlanChangeCountsSchema,
  })
  .describe(
    'The readable plan: resource addresses with their action and changed attribute paths, output changes. Paths only, never values; keys holding a Secret value read (sensitive value).',
  );
export type PlanChanges = z.infer<typeof PlanChangesSchema>;
