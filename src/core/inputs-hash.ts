import { createHash } from 'node:crypto';
import type { EnvVar } from '../schemas/kinds/jobs-policy.ts';
import type { Backend, VariableFrom } from '../schemas/kinds/spec.ts';
import type { StateEncryption } from '../schemas/kinds/state-encryption.ts';
import { canonicalJson } from './canonical-json.ts';

/**
 * The inputs hash (DESIGN.md sections 3 and 4): the one measure of "the inputs changed". It covers what
 * Terraform sees (module image, variables, variable sources and their resolved data, backend, env of the
 * `source` container) and where the outputs go, and nothing else: not annotations, not status, not scheduling policy, not the
 * Cluster API fields the controller writes back, and never the approval fields (approving must not start a
 * new plan).
 */

/** The fields that make up the inputs hash, taken from an object's spec. */
export interface Inputs {
  image: string;
  variables?: Record<string, unknown>;
  variablesFrom?: readonly VariableFrom[];
  backend?: Backend;
  env?: readonly EnvVar[];
  /**
   * `spec.stateEncryption` (the Secret references, never the passphrases): naming a new passphrase is an
   * input change, so the apply it starts writes the state again under it (a rotation).
   */
  stateEncryption?: StateEncryption;
  /**
   * A digest of the data the references resolve to (Secret keys of variablesFrom and backend.secretRef),
   * computed by the shell; so a rotated Secret is an input change. Absent when nothing is referenced.
   */
  referencedDataDigest?: string;
  /** A digest of the Cluster API contract inputs (src/core/module-inputs.ts); absent when there are none. */
  contractInputsDigest?: string;
  /**
   * `spec.outputs.secretName` (issue 24 item 3): a newly named Secret is filled by the apply it starts,
   * not left empty until some later run. Absent when unset, so objects without one keep their hash.
   */
  outputsSecretName?: string;
}

/** Re-exported: the step hashes referenced data with the same canonical text. */
export { canonicalJson };

/** The inputs of an object's spec (any target kind). */
export function inputsOf(
  spec: {
    source: { image: string };
    variables?: Record<string, unknown>;
    variablesFrom?: VariableFrom[];
    backend?: Backend;
    stateEncryption?: StateEncryption;
    jobs?: { env?: EnvVar[] };
    outputs?: { secretName: string };
  },
  referencedDataDigest?: string,
  contractInputsDigest?: string,
): Inputs {
  return {
    image: spec.source.image,
    ...(spec.variables ? { variables: spec.variables } : {}),
    ...(spec.variablesFrom ? { variablesFrom: spec.variablesFrom } : {}),
    ...(spec.backend ? { backend: spec.backend } : {}),
    ...(spec.jobs?.env ? { env: spec.jobs.env } : {}),
    ...(spec.stateEncryption ? { stateEncryption: spec.stateEncryption } : {}),
    ...(referencedDataDigest ? { referencedDataDigest } : {}),
    ...(contractInputsDigest ? { contractInputsDigest } : {}),
    ...(spec.outputs ? { outputsSecretName: spec.outputs.secretName } : {}),
  };
}

/** SHA-256 (hex) of the canonical JSON of the inputs. */
export function inputsHash(inputs: Inputs): string {
  return createHash('sha256').update(canonicalJson(inputs)).digest('hex');
}
