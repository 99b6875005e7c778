/**
 * The runtime's environment: the container's own (the image may set TF_CLI_CONFIG_FILE for a provider
 * mirror, the Job may set cloud credentials), minus what would change the step contract, plus automation
 * settings and the module's contract inputs as `TF_VAR_<name>` (src/core/module-inputs.ts).
 */

/** `TF_CLI_ARGS` and `TF_CLI_ARGS_<command>` add flags to every command (say `-lock=false`): never passed. */
const CONTRACT_BREAKING = /^TF_CLI_ARGS(_|$)/;

/**
 * A contract input as `TF_VAR_` text: a string as it is; any other value as JSON, which Terraform parses as
 * an HCL expression for a variable of a non-string type (`true`, `3`, `{"vpc": "v-1"}`).
 */
function tfVarText(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** A registry token OpenTofu reads from the environment (`TF_TOKEN_<host>`, the one `TF_` a spec may set). */
const REGISTRY_TOKEN = /^TF_TOKEN_/;

/**
 * The values of the registry tokens in `base` (the container's environment, `env[].valueFrom.secretKeyRef`
 * of the spec): secrets to redact from everything the runner prints. Pure.
 */
export function registryTokens(base: NodeJS.ProcessEnv): string[] {
  return Object.entries(base).flatMap(([key, value]) =>
    REGISTRY_TOKEN.test(key) && value !== undefined && value !== '' ? [value] : [],
  );
}

/**
 * Builds the environment of every runtime process; `tmpDir` is the work dir's temp dir, `contractInputs`
 * the run config's. Terraform ignores a `TF_VAR_` whose variable the module does not declare, and a value
 * from the variables file wins over it. `encryption`, the run's `TF_ENCRYPTION` (src/runner/state-encryption.ts),
 * replaces any the image sets; without it the image's own (if any) stays, as its author chose.
 */
export function runtimeEnv(
  base: NodeJS.ProcessEnv,
  tmpDir: string,
  contractInputs: Readonly<Record<string, unknown>> = {},
  encryption?: string,
): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(base)) if (!CONTRACT_BREAKING.test(key)) env[key] = value;
  for (const [name, value] of Object.entries(contractInputs)) env[`TF_VAR_${name}`] = tfVarText(value);
  return {
    ...env,
    ...(encryption !== undefined ? { TF_ENCRYPTION: encryption } : {}),
    TF_IN_AUTOMATION: '1',
    TF_INPUT: '0',
    // Terraform phones home to its checkpoint service otherwise; the Job may have no egress.
    CHECKPOINT_DISABLE: '1',
    // The image may have no writable /tmp (scratch, read-only root file system).
    TMPDIR: tmpDir,
  };
}
