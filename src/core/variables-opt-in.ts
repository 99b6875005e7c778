import type { EnvVar } from '../schemas/kinds/jobs-policy.ts';
import type { VariableFrom } from '../schemas/kinds/spec.ts';
import { type RunEvent, runEvent } from './event-spec.ts';

/**
 * Opt-in Secrets for variables (issue 16 item 1): `spec.variablesFrom` and `env[].valueFrom.secretKeyRef`
 * read only Secrets that carry `captf.io/variables=true`. Without it, whoever may create an object could
 * read any Secret of the namespace into a module they control. The backend Secret (`spec.backend.secretRef`)
 * is the installation's own configuration and needs no label.
 */

/** The label a Secret carries to let objects of its namespace read variables from it. */
export const VARIABLES_OPT_IN_LABEL = 'captf.io/variables';
/** Its one accepted value. */
export const VARIABLES_OPT_IN_VALUE = 'true';

/** The labels that opt a Secret in (`kubectl label secret <name> captf.io/variables=true`). */
export const VARIABLES_SECRET_LABELS: Readonly<Record<string, string>> = {
  [VARIABLES_OPT_IN_LABEL]: VARIABLES_OPT_IN_VALUE,
};

/** Whether a Secret with these labels opted in to be read for variables. */
export function isVariablesSecret(labels: Readonly<Record<string, string>> | undefined): boolean {
  return labels?.[VARIABLES_OPT_IN_LABEL] === VARIABLES_OPT_IN_VALUE;
}

/**
 * Opt-in of each Secret the object's variables reference that exists: Secret name → carries the label.
 * A name not in the map was not found.
 */
export type VariablesSecretOptIns = ReadonlyMap<string, boolean>;

/** One reference to a Secret that feeds a variable; `use` names it for a person. */
export interface VariablesSecretRef {
  secret: string;
  use: string;
}

/** The Secrets `env[].valueFrom.secretKeyRef` of the effective Jobs policy references, in spec order. */
export function envSecretRefs(env: readonly EnvVar[]): VariablesSecretRef[] {
  return env.flatMap((variable) => {
    const name = variable.valueFrom?.secretKeyRef?.name;
    return name === undefined ? [] : [{ secret: name, use: `env ${variable.name}` }];
  });
}

/** The Secrets `spec.variablesFrom` references, in spec order. */
export function variablesFromRefs(variablesFrom: readonly VariableFrom[] | undefined): VariablesSecretRef[] {
  return (variablesFrom ?? []).map((from) => ({
    secret: from.secretKeyRef.name,
    use: `variable ${from.name}`,
  }));
}

/** Why a run may not read a Secret: it exists and does not carry the label. */
export interface NotOptedIn {
  secret: string;
  /** Names the Secret, the reference and the label; never a value. */
  message: string;
}

/**
 * The first reference to an existing Secret that did not opt in; undefined when every one did. A Secret
 * that does not exist is not judged here: `variablesFrom` waits for it as a dependency, and an env
 * reference leaves it to the kubelet (an `optional` key, or `CreateContainerConfigError`).
 */
export function firstNotOptedIn(
  refs: readonly VariablesSecretRef[],
  optIns: VariablesSecretOptIns,
): NotOptedIn | undefined {
  const ref = refs.find((r) => optIns.get(r.secret) === false);
  if (ref === undefined) return undefined;
  return {
    secret: ref.secret,
    message:
      `Secret ${ref.secret} (${ref.use}) does not carry the label ${VARIABLES_OPT_IN_LABEL}=${VARIABLES_OPT_IN_VALUE}; ` +
      'label it to let this object read variables from it',
  };
}

/**
 * The Warning Event of a run held back by a Secret that did not opt in; one per Secret and inputs (the
 * Event name derives from the transition key), so a waiting object does not repeat it.
 */
export function notOptedInEvent(notOptedIn: NotOptedIn, inputsHash: string): RunEvent {
  return runEvent('VariablesSecretNotOptedIn', {
    action: 'CreateJob',
    note: notOptedIn.message,
    transitionKey: `${notOptedIn.secret}@${inputsHash}`,
  });
}
