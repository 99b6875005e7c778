import { GetParametersCommand, type SSMClient } from '@aws-sdk/client-ssm';

/**
 * The Lambda's secrets from SSM Parameter Store instead of its plain environment (docs/install.md, "AWS
 * Lambda"): each `CAPTF_SSM_*` variable names a SecureString parameter whose decrypted value becomes the
 * variable the handlers read, so the function's configuration (visible to anyone who may read it) holds
 * parameter names only. One `GetParameters` call (with decryption) per read; a missing parameter is an error
 * that names it, never a silent fallback to the plain variable.
 */

/** Which handler variable each `CAPTF_SSM_*` variable fills: the API server kubeconfig, the Redis AUTH, the bearer token. */
export const SSM_SECRET_VARIABLES = {
  CAPTF_SSM_KUBECONFIG: 'CAPTF_KUBECONFIG_CONTENT',
  CAPTF_SSM_REDIS_PASSWORD: 'REDIS_PASSWORD',
  CAPTF_SSM_AUTH_TOKEN: 'CAPTF_AUTH_TOKEN',
} as const;

/** Seconds the values read are trusted before the next invocation reads them again (rotation). */
export const DEFAULT_SECRETS_TTL_SECONDS = 300;

/** The secret values read, by the handler variable they fill, and when (ms since the epoch). */
export interface ReadSecrets {
  values: Record<string, string>;
  readAtMs: number;
}

/** The parameter names `env` asks for, by the handler variable they fill; empty when none is set. */
export function requestedParameters(env: Record<string, string | undefined>): Map<string, string> {
  const requested = new Map<string, string>();
  for (const [from, to] of Object.entries(SSM_SECRET_VARIABLES)) {
    const name = env[from];
    if (name !== undefined && name !== '') requested.set(to, name);
  }
  return requested;
}

/**
 * Reads the requested parameters with one `GetParameters` (WithDecryption). Throws naming the parameters
 * SSM does not have, or SSM's own error (access denied, throttled) with its cause.
 */
export async function readSecrets(
  env: Record<string, string | undefined>,
  client: SSMClient,
  nowMs: () => number,
): Promise<ReadSecrets> {
  const requested = requestedParameters(env);
  if (requested.size === 0) return { values: {}, readAtMs: nowMs() };
  const names = [...new Set(requested.values())];
  const answer = await client
    .send(new GetParametersCommand({ Names: names, WithDecryption: true }))
    .catch((cause: unknown) => {
      throw new Error(`read SSM parameters ${names.join(', ')}: ${(cause as Error).message}`, { cause });
    });
  if ((answer.InvalidParameters ?? []).length > 0)
    throw new Error(`read SSM parameters: not found: ${(answer.InvalidParameters ?? []).join(', ')}`);
  const byName = new Map((answer.Parameters ?? []).map((p) => [p.Name ?? '', p.Value ?? '']));
  const values: Record<string, string> = {};
  for (const [variable, name] of requested) {
    const value = byName.get(name);
    if (value === undefined || value === '') throw new Error(`read SSM parameter ${name}: no value`);
    values[variable] = value;
  }
  return { values, readAtMs: nowMs() };
}

/** `env` with the secrets in place of their plain variables (which the function should not set). */
export function withSecrets(
  env: Record<string, string | undefined>,
  secrets: ReadSecrets,
): Record<string, string | undefined> {
  return { ...env, ...secrets.values };
}

/** Whether two reads differ in any value: a rotation, so the handlers are built again. */
export function secretsChanged(before: ReadSecrets, after: ReadSecrets): boolean {
  const keys = new Set([...Object.keys(before.values), ...Object.keys(after.values)]);
  return [...keys].some((key) => before.values[key] !== after.values[key]);
}

/** The TTL from `CAPTF_SECRETS_TTL_SECONDS` (a positive integer), else the default. */
export function secretsTtlSeconds(env: Record<string, string | undefined>): number {
  const ttl = Number(env.CAPTF_SECRETS_TTL_SECONDS);
  return Number.isInteger(ttl) && ttl > 0 ? ttl : DEFAULT_SECRETS_TTL_SECONDS;
}
