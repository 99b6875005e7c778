import type { TargetKind } from '../schemas/kinds/api-group.ts';
import { LABELS } from './job-labels.ts';
import { type OwnerReference, ownerReference } from './job-manifest.ts';

/**
 * The outputs Secret of an object (`spec.outputs.secretName`, issue 24 item 3): every root output of its
 * module, sensitive ones included, written by the object's runner after each successful apply and refresh.
 *
 * The runner writes it, not the controller at bookkeeping: the values would otherwise have to leave the
 * Job through its result, which is the pod's termination message (readable by anyone who may read pods,
 * and capped at 4096 bytes), and then pass through the controller, which would need the state of any
 * backend to read them itself. So the values never leave the Job but into this Secret.
 *
 * RBAC cannot restrict `create` by name, so the controller creates the Secret empty, owned by the object
 * (the garbage collector deletes it with the object), before the object's Job; the runner identity's Role
 * then names it with `get` and `update` only (src/core/runner-identity.ts). A Secret of that name the
 * object does not own is never granted: its Jobs are refused until the spec names another.
 */

/** The label naming the object whose outputs a Secret holds, for `kubectl get secret -l`. */
export const OUTPUTS_OF_LABEL = 'captf.io/outputs-of';

/**
 * The annotation naming the one ServiceAccount that may write the Secret (the object's runner identity):
 * infra/admission/runner-secret-writes-policy.yaml refuses any other runner identity's update, even one
 * whose Role names the Secret. An annotation, since `captf-runner-<suffix>` may be longer than a label value.
 */
export const OUTPUTS_WRITER_ANNOTATION = 'captf.io/outputs-writer';

/** core/v1 Secret, as the controller creates it. */
export interface OutputsSecretManifest {
  apiVersion: 'v1';
  kind: 'Secret';
  type: 'Opaque';
  metadata: {
    name: string;
    namespace: string;
    labels: Record<string, string>;
    annotations: Record<string, string>;
    ownerReferences: OwnerReference[];
  };
}

/**
 * The empty outputs Secret, owned by the object (its controller reference), naming `writer`, the
 * ServiceAccount the object's Jobs run as.
 */
export function buildOutputsSecret(input: {
  owner: { apiVersion: string; kind: TargetKind; name: string; namespace: string; uid: string };
  secretName: string;
  writer: string;
}): OutputsSecretManifest {
  const { owner } = input;
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    type: 'Opaque',
    metadata: {
      name: input.secretName,
      namespace: owner.namespace,
      labels: {
        [LABELS.ownerKind]: owner.kind,
        [LABELS.ownerName]: owner.name,
        [LABELS.ownerUid]: owner.uid,
        [OUTPUTS_OF_LABEL]: owner.name,
      },
      annotations: { [OUTPUTS_WRITER_ANNOTATION]: input.writer },
      // Not blocking: deleting the object need not wait for its outputs.
      ownerReferences: [ownerReference(owner, { blockOwnerDeletion: false })],
    },
  };
}

/** Whose a Secret read under the outputs name is: this object's (its controller reference) or another's. */
export function outputsSecretHolder(
  secret: { metadata?: { ownerReferences?: { uid?: string; controller?: boolean }[] } },
  ownerUid: string,
): 'ours' | 'foreign' {
  const owners = secret.metadata?.ownerReferences ?? [];
  return owners.some((o) => o.uid === ownerUid && o.controller === true) ? 'ours' : 'foreign';
}

/** Why a start is refused when the Secret is another's; names the Secret, never its content. */
export function foreignOutputsSecretMessage(name: string): string {
  return `Secret ${name} (spec.outputs.secretName) exists and is not this object's: the runner may only write a Secret the controller created for this object; name another Secret, or delete that one`;
}
