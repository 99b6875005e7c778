import { z } from 'zod';
import {
  envNameNotReserved,
  envValueOrValueFrom,
  lockTimeoutBelowDeadline,
  quantityNotEmpty,
  registryTokenFromSecret,
  ruleMessage,
  serviceAccountNotRunnerIdentity,
  withRules,
} from './rules.ts';

/**
 * `spec.jobs`: how the Jobs of an object run (DESIGN.md section 2). Every field is optional and carries no
 * schema default, because a machine's `spec.jobs` is merged field by field over its cluster's
 * `spec.defaults.jobs`: a default written into the object would hide the cluster's value. The defaults
 * apply once, in `resolveJobsPolicy`.
 */

/** Largest env list; a bound lets the API server's CEL cost estimate accept the env rule. */
export const MAX_ENV = 64;

const KeyRefSchema = z.object({
  name: z.string().min(1).max(253).describe('Name of the Secret or ConfigMap in the object namespace.'),
  key: z.string().min(1).max(253).describe('Key inside it.'),
  optional: z.boolean().optional().describe('Start the Job even when the key is missing.'),
});

export const EnvVarSchema = withRules(
  z
    .object({
      name: z
        .string()
        .min(1)
        .max(256)
        .regex(/^[-._a-zA-Z][-._a-zA-Z0-9]*$/, { message: 'env names are letters, digits, `_`, `-` and `.`' })
        .describe(
          'Variable name; names starting TF_ or KUBE_ are reserved for the runner, except TF_TOKEN_<host> (a registry token, from a Secret).',
        ),
      value: z.string().optional().describe('Literal value.'),
      valueFrom: z
        .object({
          secretKeyRef: KeyRefSchema.optional(),
          configMapKeyRef: KeyRefSchema.optional(),
        })
        .optional()
        .describe('Value read from a Secret or ConfigMap key.'),
    })
    .describe('An environment variable of the `source` container (provider credentials, proxies).'),
  [envNameNotReserved, envValueOrValueFrom, registryTokenFromSecret],
);
export type EnvVar = z.infer<typeof EnvVarSchema>;

/** Kubernetes quantity (`250m`, `512Mi`, `2`): a number or a string, as in core/v1. */
export const QuantitySchema = withRules(
  z.union([z.number().int(), z.string()]).meta({
    'x-kubernetes-int-or-string': true,
    description: 'A Kubernetes quantity such as 250m or 512Mi.',
  }),
  [quantityNotEmpty],
);
export type Quantity = z.infer<typeof QuantitySchema>;

/**
 * Resource names a requests or limits map may hold: cpu, memory, ephemeral-storage and a few extended
 * resources. A bound the API server needs: it multiplies the quantity rule's CEL cost by the map's size.
 */
export const MAX_RESOURCE_NAMES = 16;

function resourceMapSchema() {
  return z
    .record(z.string(), QuantitySchema)
    .refine((map) => Object.keys(map).length <= MAX_RESOURCE_NAMES, {
      message: `at most ${MAX_RESOURCE_NAMES} resource names`,
    })
    .meta({ maxProperties: MAX_RESOURCE_NAMES });
}

export const ResourcesSchema = z
  .object({
    requests: resourceMapSchema().optional(),
    limits: resourceMapSchema().optional(),
  })
  .describe('Resources of the `source` container.');
export type Resources = z.infer<typeof ResourcesSchema>;

export const TolerationSchema = z.object({
  key: z.string().optional(),
  operator: z.enum(['Exists', 'Equal']).optional(),
  value: z.string().optional(),
  effect: z.enum(['NoSchedule', 'PreferNoSchedule', 'NoExecute']).optional(),
  tolerationSeconds: z.number().int().optional(),
});
export type Toleration = z.infer<typeof TolerationSchema>;

/** Limits of DESIGN.md section 2. */
export const JOBS_LIMITS = {
  activeDeadlineSeconds: { min: 1, max: 86_400 },
  lockTimeoutSeconds: { min: 0, max: 3600 },
  historyLimit: { min: 0, max: 100 },
} as const;

export const JobsPolicySchema = withRules(
  z
    .object({
      activeDeadlineSeconds: z
        .number()
        .int()
        .min(JOBS_LIMITS.activeDeadlineSeconds.min)
        .max(JOBS_LIMITS.activeDeadlineSeconds.max)
        .optional()
        .describe('Seconds a Job may run before it is killed (default 3600, 1-86400).'),
      lockTimeoutSeconds: z
        .number()
        .int()
        .min(JOBS_LIMITS.lockTimeoutSeconds.min)
        .max(JOBS_LIMITS.lockTimeoutSeconds.max)
        .optional()
        .describe(
          'Seconds a step waits for the state lock (default 300, 0-3600, below activeDeadlineSeconds).',
        ),
      successfulJobsHistoryLimit: z
        .number()
        .int()
        .min(JOBS_LIMITS.historyLimit.min)
        .max(JOBS_LIMITS.historyLimit.max)
        .optional()
        .describe('Finished successful Jobs kept per op (default 3; the newest success is always kept).'),
      failedJobsHistoryLimit: z
        .number()
        .int()
        .min(1)
        .max(JOBS_LIMITS.historyLimit.max)
        .optional()
        .describe(
          'Finished failed Jobs kept per op (default 3, min 1); also where the retry delay reaches its cap.',
        ),
      imagePullSecrets: z
        .array(z.object({ name: z.string().min(1) }))
        .optional()
        .describe('Secrets for pulling the module image.'),
      resources: ResourcesSchema.optional(),
      serviceAccountName: z
        .string()
        .min(1)
        .max(253)
        .optional()
        .describe(
          "Service account of the Job pod; absent: the object's own runner identity, which reaches only its state.",
        ),
      nodeSelector: z.record(z.string(), z.string()).optional().describe('Node labels the Job pod needs.'),
      tolerations: z.array(TolerationSchema).optional().describe('Taints the Job pod tolerates.'),
      env: z
        .array(EnvVarSchema)
        .max(MAX_ENV)
        .optional()
        .describe(
          'Extra environment of the `source` container; TF_ and KUBE_ names are rejected, except TF_TOKEN_<host> from a Secret (a private registry token).',
        ),
    })
    .describe('How the Jobs of this object run.'),
  [lockTimeoutBelowDeadline, serviceAccountNotRunnerIdentity],
);
export type JobsPolicy = z.infer<typeof JobsPolicySchema>;

/** The policy a Job runs with: every defaulted field filled in. */
export interface EffectiveJobsPolicy {
  activeDeadlineSeconds: number;
  lockTimeoutSeconds: number;
  successfulJobsHistoryLimit: number;
  failedJobsHistoryLimit: number;
  imagePullSecrets: { name: string }[];
  resources: { requests: Record<string, Quantity>; limits: Record<string, Quantity> };
  serviceAccountName?: string;
  nodeSelector: Record<string, string>;
  tolerations: Toleration[];
  env: EnvVar[];
}

/** DESIGN.md section 2 defaults: 3600 s deadline, 300 s lock timeout, histories 3/3, 250m/512Mi, 2Gi limit. */
export const JOBS_POLICY_DEFAULTS: Readonly<EffectiveJobsPolicy> = {
  activeDeadlineSeconds: 3600,
  lockTimeoutSeconds: 300,
  successfulJobsHistoryLimit: 3,
  failedJobsHistoryLimit: 3,
  imagePullSecrets: [],
  // No CPU limit: Terraform is bursty and CPU throttling only makes provider calls time out.
  resources: { requests: { cpu: '250m', memory: '512Mi' }, limits: { memory: '2Gi' } },
  nodeSelector: {},
  tolerations: [],
  env: [],
};

/**
 * The effective policy of an object: its own `spec.jobs` over the cluster's `spec.defaults.jobs` (machines
 * and pools) over the built-in defaults, field by field (DESIGN.md section 2). A field set on a nearer layer
 * replaces the whole field of a farther one; `resources.requests` and `resources.limits` are replaced as
 * units too, so a machine that sets only `limits` keeps the inherited requests. The result can break
 * cross-field rules that each layer keeps on its own; check it with `jobsPolicyProblems`.
 */
export function resolveJobsPolicy(
  own: JobsPolicy | undefined,
  clusterDefaults?: JobsPolicy,
): EffectiveJobsPolicy {
  const layers = [clusterDefaults ?? {}, own ?? {}];
  const pick = <K extends keyof JobsPolicy & keyof EffectiveJobsPolicy>(key: K): EffectiveJobsPolicy[K] => {
    let value = JOBS_POLICY_DEFAULTS[key];
    for (const layer of layers) {
      const candidate = layer[key];
      if (candidate !== undefined) value = candidate as EffectiveJobsPolicy[K];
    }
    return value;
  };
  let requests = JOBS_POLICY_DEFAULTS.resources.requests;
  let limits = JOBS_POLICY_DEFAULTS.resources.limits;
  for (const layer of layers) {
    if (layer.resources?.requests !== undefined) requests = layer.resources.requests;
    if (layer.resources?.limits !== undefined) limits = layer.resources.limits;
  }
  const serviceAccountName = pick('serviceAccountName');
  return {
    activeDeadlineSeconds: pick('activeDeadlineSeconds'),
    lockTimeoutSeconds: pick('lockTimeoutSeconds'),
    successfulJobsHistoryLimit: pick('successfulJobsHistoryLimit'),
    failedJobsHistoryLimit: pick('failedJobsHistoryLimit'),
    imagePullSecrets: pick('imagePullSecrets'),
    resources: { requests, limits },
    ...(serviceAccountName !== undefined ? { serviceAccountName } : {}),
    nodeSelector: pick('nodeSelector'),
    tolerations: pick('tolerations'),
    env: pick('env'),
  };
}

/**
 * Messages for every cross-field rule the effective policy breaks (empty when it is valid). The same rules
 * as the schema, applied after the merge, where a machine's deadline can meet its cluster's lock timeout.
 */
export function jobsPolicyProblems(policy: EffectiveJobsPolicy): string[] {
  const problems: string[] = [];
  if (!lockTimeoutBelowDeadline.holds(policy)) problems.push(ruleMessage(lockTimeoutBelowDeadline, policy));
  for (const env of policy.env) {
    if (!envNameNotReserved.holds(env)) problems.push(ruleMessage(envNameNotReserved, env));
    if (!registryTokenFromSecret.holds(env)) problems.push(ruleMessage(registryTokenFromSecret, env));
  }
  return problems;
}
