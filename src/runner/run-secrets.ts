import { type SecretJson, secretTexts } from '../core/redaction.ts';
import type { RunConfig } from '../schemas/run-config.ts';

/**
 * The secrets of one run (DESIGN.md section 10, C15); the redaction rule itself is src/core/redaction.ts,
 * shared with the controller. The runner hides these values in its error summary and in everything it
 * prints, never inside the contract outputs.
 */

/**
 * Every secret of a run config: secret inputs, sensitive contract inputs (bootstrap data), secret backend
 * settings and the plan HMAC key.
 */
export function runConfigSecrets(config: RunConfig): string[] {
  const inputs = config.secretInputs.flatMap((name) => {
    const value = config.variables[name];
    return value === undefined ? [] : secretTexts(value as SecretJson);
  });
  const contract = config.sensitiveContractInputs.flatMap((name) => {
    const value = config.contractInputs[name];
    return value === undefined ? [] : secretTexts(value as SecretJson);
  });
  const backend = config.backend;
  const backendSecrets = (backend?.secretKeys ?? []).flatMap((key) => {
    const value = backend?.config[key];
    return value === undefined ? [] : secretTexts(value);
  });
  return [...inputs, ...contract, ...backendSecrets, config.planHmacKey];
}
