/**
 * The runtime's environment: the container's own (the image may set TF_CLI_CONFIG_FILE for a provider
 * mirror, the Job may set cloud credentials), minus what would change the step contract, plus automation
 * settings.
 */

/** `TF_CLI_ARGS` and `TF_CLI_ARGS_<command>` add flags to every command (say `-lock=false`): never passed. */
const CONTRACT_BREAKING = /^TF_CLI_ARGS(_|$)/;

/** Builds the environment of every runtime process; `tmpDir` is the work dir's temp dir. */
export function runtimeEnv(base: NodeJS.ProcessEnv, tmpDir: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(base)) if (!CONTRACT_BREAKING.test(key)) env[key] = value;
  return {
    ...env,
    TF_IN_AUTOMATION: '1',
    TF_INPUT: '0',
    // Terraform phones home to its checkpoint service otherwise; the Job may have no egress.
    CHECKPOINT_DISABLE: '1',
    // The image may have no writable /tmp (scratch, read-only root file system).
    TMPDIR: tmpDir,
  };
}
