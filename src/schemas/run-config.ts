import { z } from 'zod';
import { ApiEndpointSchema } from './kinds/api-endpoint.ts';
import { TARGET_KINDS } from './kinds/api-group.ts';

/**
 * The run config: what the controller hands one Job's runner (DESIGN.md section 9). The controller writes it
 * as the key RUN_CONFIG_FILE of the per-run Secret `captf-run-<job>`; the Secret is mounted read-only at
 * `/captf/config`, so the runner reads `/captf/config/run.json`. This schema is the one contract between the
 * writer (the Job builder) and the reader (src/runner); both import it from here.
 */

/** The Secret key, and so the file name under the config dir, that holds the run config. */
export const RUN_CONFIG_FILE = 'run.json';

/** Largest run config the runner reads, in bytes (a Secret holds at most 1 MiB). */
export const RUN_CONFIG_MAX_BYTES = 1024 * 1024;

/** Apply policies (DESIGN.md section 2); the runner's destructive guard follows them (section 11). */
export const APPLY_POLICIES = ['Automatic', 'Manual'] as const;
export const ApplyPolicySchema = z.enum(APPLY_POLICIES);
export type ApplyPolicy = z.infer<typeof ApplyPolicySchema>;

/** A plan digest as the runner reports it and the controller passes back: `sha256:` and 64 hex digits. */
export const PlanDigestSchema = z.string().regex(/^sha256:[0-9a-f]{64}$/);

/** A backend config value: `-backend-config` takes scalars only. */
export const BackendValueSchema = z.union([z.string(), z.number(), z.boolean()]);

export const BackendConfigSchema = z.object({
  /** Backend type written into the generated `terraform { backend "<type>" {} }` block, e.g. `kubernetes`. */
  type: z.string().regex(/^[a-z][a-z0-9_]*$/),
  /** Passed to `init` through a generated `-backend-config` file, never on the command line. */
  config: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/), BackendValueSchema).default({}),
  /** Keys of `config` whose values are secret: redacted from everything the runner writes or prints. */
  secretKeys: z.array(z.string()).default([]),
  /**
   * The kubernetes backend's `labels` (on the state Secret and the lock Lease): `clusterctl.cluster.x-k8s.io/move`
   * for the state of an object Cluster API owns, so `clusterctl move` carries the state with the object.
   */
  labels: z.record(z.string().max(317), z.string().max(63)).optional(),
});
export type BackendConfig = z.infer<typeof BackendConfigSchema>;

/** A Secret key in the run's namespace: where a passphrase is. */
export const SecretKeyLocationSchema = z.object({
  name: z.string().min(1).max(253),
  key: z.string().min(1).max(253),
});
export type SecretKeyLocation = z.infer<typeof SecretKeyLocationSchema>;

/**
 * State encryption (issue 25 item 3): where the runner reads the passphrase and its fallback, as the pod's
 * ServiceAccount; the values never travel in the run config. `fallback: 'unencrypted'` reads a plain state
 * (turning encryption on for a state that has one).
 */
export const RunStateEncryptionSchema = z.object({
  namespace: z.string().min(1).max(63),
  passphrase: SecretKeyLocationSchema,
  fallback: z.union([SecretKeyLocationSchema, z.literal('unencrypted')]).optional(),
});
export type RunStateEncryption = z.infer<typeof RunStateEncryptionSchema>;

export const RunConfigSchema = z.object({
  version: z.literal(1),
  /**
   * The kind of the object the Job runs for: which Cluster API contract outputs its CRD records, and so
   * which outputs must pass the CRD's schema (src/schemas/contract-outputs.ts). Absent: all of them.
   */
  kind: z.enum(TARGET_KINDS).optional(),
  /** Input variables by name (JSON values); written to a generated `-var-file`, never passed as `-var`. */
  variables: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_-]*$/), z.json()).default({}),
  /**
   * Names of `variables` whose values came from Secrets (`spec.variablesFrom`): every string leaf of their
   * values is redacted from the result and from everything the runner prints (C15).
   */
  secretInputs: z.array(z.string()).default([]),
  /**
   * The module input contract (src/core/module-inputs.ts): Cluster API inputs by variable name, handed to
   * the runtime as `TF_VAR_<name>` so a module that declares none of them still works.
   */
  contractInputs: z.record(z.string().regex(/^[a-z][a-z0-9_]*$/), z.json()).default({}),
  /** Names of `contractInputs` whose values are secret (`bootstrap_data`): redacted like `secretInputs`. */
  sensitiveContractInputs: z.array(z.string()).default([]),
  /**
   * The machine's `spec.providerID` once set: Cluster API never re-identifies a Machine, so an apply whose
   * plan changes the `providerID` output is refused (issue 11 item 4).
   */
  providerID: z.string().min(1).max(512).optional(),
  /**
   * The cluster's `spec.controlPlaneEndpoint` once set under Cluster API: the Cluster copies it once and
   * never again, so an apply whose plan changes the `controlPlaneEndpoint` output is refused (issue 23
   * item 11).
   */
  controlPlaneEndpoint: ApiEndpointSchema.optional(),
  /** Absent: the module's own configuration decides (local state); the controller always sends one. */
  backend: BackendConfigSchema.optional(),
  /** State and plan encryption; absent: none. */
  stateEncryption: RunStateEncryptionSchema.optional(),
  /** `-lock-timeout` for every locking step, in seconds (DESIGN.md section 2: default 300, 0–3600). */
  lockTimeoutSeconds: z.number().int().min(0).max(3600).default(300),
  /** Destructive guard policy for `apply` (DESIGN.md section 11). */
  applyPolicy: ApplyPolicySchema.default('Automatic'),
  /** Digest of an approved plan: apply only a plan with exactly this digest (DESIGN.md section 11). */
  expectedPlanDigest: PlanDigestSchema.optional(),
  /** Lock id the controller judged stale (DESIGN.md section 12): `force-unlock` runs once after `init`. */
  forceUnlockId: z.string().min(1).max(256).optional(),
  /**
   * The per-object plan HMAC key (UTF-8 bytes, at least 32 characters). It keys the digest so that the
   * digest reveals nothing about sensitive planned values (DESIGN.md section 11).
   */
  planHmacKey: z.string().min(32),
  /**
   * The Secret every root output goes to after a successful apply or refresh (`spec.outputs.secretName`,
   * issue 24 item 3). The controller created it, owned by the object; the runner identity may get and
   * update it, and nothing else of that name.
   */
  outputsSecret: z.object({ namespace: z.string().min(1), name: z.string().min(1).max(253) }).optional(),
  /**
   * Where the runner writes the run's log just before it exits (src/core/run-log.ts): the Secret's name,
   * namespace, labels and owner references, all set by the controller; the runner adds the log.
   */
  runLog: z
    .object({
      namespace: z.string().min(1).max(63),
      name: z.string().min(1).max(253),
      labels: z.record(z.string().max(317), z.string().max(63)),
      ownerReferences: z.array(
        z.object({
          apiVersion: z.string().min(1),
          kind: z.string().min(1),
          name: z.string().min(1),
          uid: z.string().min(1),
          controller: z.boolean(),
          blockOwnerDeletion: z.boolean(),
        }),
      ),
    })
    .optional(),
});
export type RunConfig = z.infer<typeof RunConfigSchema>;
/** What the controller writes: defaults may be left out. */
export type RunConfigInput = z.input<typeof RunConfigSchema>;

/** Outcome of reading a run config: a value, never a throw (STYLE.md habit 5). */
export type ParsedRunConfig = { ok: true; config: RunConfig } | { ok: false; message: string };

/**
 * Parses the text of `run.json`. Error messages name the path and the rule broken, never a value, because
 * the text holds secrets.
 */
export function parseRunConfig(text: string): ParsedRunConfig {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return { ok: false, message: 'read run config: not JSON' };
  }
  const parsed = RunConfigSchema.safeParse(json);
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    const where = first ? first.path.map(String).join('.') || '(root)' : '(root)';
    return { ok: false, message: `read run config: ${where}: ${first?.code ?? 'invalid'}` };
  }
  return { ok: true, config: parsed.data };
}
