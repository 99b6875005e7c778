import type { z } from 'zod';

/**
 * Every cross-field rule of our kinds, in one place (DESIGN.md section 2, issue 3). Each rule carries the
 * same check twice: as CEL for the API server (`x-kubernetes-validations`, so `kubectl apply` is rejected
 * before anything runs) and as TypeScript for zod (so the controller and tests see the same verdict with the
 * same message). Transition rules compare with the stored object (`oldSelf`); only the API server can check
 * them, so they have no TypeScript side.
 */

/** What the API server checks: one `x-kubernetes-validations` entry. */
export interface CelRule {
  /** CEL expression over `self` (and `oldSelf` for transition rules); true means valid. */
  cel: string;
  /** The message a person reads when the rule is broken; says what to change. */
  message: string;
  /** A CEL string expression building a message with the offending value, when one helps. */
  messageExpression?: string;
  /** The field the message points at, relative to the object the rule is attached to (e.g. `.name`). */
  fieldPath?: string;
}

/** A rule over one value, checked by the API server (CEL) and by zod (`holds`) alike. */
export interface CrossFieldRule<T> extends CelRule {
  /** The same check in TypeScript; true means valid. */
  holds: (value: T) => boolean;
  /** The same message for zod, with the offending value; defaults to `message`. */
  describe?: (value: T) => string;
}

/**
 * A rule comparing the new object with the stored one (`oldSelf`); only the API server can check it, so it
 * has no TypeScript side.
 */
export type TransitionRule = CelRule;

/** The message of a broken rule for one value. */
export function ruleMessage<T>(rule: CrossFieldRule<T>, value: T): string {
  return rule.describe ? rule.describe(value) : rule.message;
}

/** 63: the longest label value; the object's name goes into the `captf.io/owner-name` label of its Jobs. */
export const MAX_TARGET_NAME_LENGTH = 63;

/**
 * A target's name fits a label value (DESIGN.md section 9: `captf.io/owner-name`), else none of its Jobs
 * could ever be created. A root rule: CEL reaches `self.metadata.name` from the root of the object.
 */
export const nameFitsOwnerLabel: CrossFieldRule<{ metadata: { name: string } }> = {
  cel: `size(self.metadata.name) <= ${MAX_TARGET_NAME_LENGTH}`,
  message: `metadata.name must be at most ${MAX_TARGET_NAME_LENGTH} characters: it is the captf.io/owner-name label of every Job of the object; choose a shorter name`,
  // No messageExpression: the API server estimates string building over an unbounded name as too costly.
  holds: (v) => v.metadata.name.length <= MAX_TARGET_NAME_LENGTH,
  describe: (v) =>
    `metadata.name has ${v.metadata.name.length} characters; at most ${MAX_TARGET_NAME_LENGTH} fit the captf.io/owner-name label of every Job of the object; choose a shorter name`,
};

/** Env names the runner owns: Terraform reads `TF_*`, the kubernetes backend reads `KUBE_*`. */
export const RESERVED_ENV_PREFIXES = ['TF_', 'KUBE_'] as const;

interface LockTimeoutView {
  lockTimeoutSeconds?: number | undefined;
  activeDeadlineSeconds?: number | undefined;
}

/**
 * `lockTimeoutSeconds` below `activeDeadlineSeconds`: a Job that waits out a held state lock must still
 * have time to run. Checked where both are set on one object; the merged policy of a machine (its own
 * `jobs` over the cluster's `defaults.jobs`) is checked again by the controller (`JobPolicyInvalid`).
 */
export const lockTimeoutBelowDeadline: CrossFieldRule<LockTimeoutView> = {
  cel: '!has(self.lockTimeoutSeconds) || !has(self.activeDeadlineSeconds) || self.lockTimeoutSeconds < self.activeDeadlineSeconds',
  message:
    'lockTimeoutSeconds must be below activeDeadlineSeconds: a Job waiting for the state lock would be killed before it runs; lower lockTimeoutSeconds or raise activeDeadlineSeconds',
  fieldPath: '.lockTimeoutSeconds',
  holds: (v) =>
    v.lockTimeoutSeconds === undefined ||
    v.activeDeadlineSeconds === undefined ||
    v.lockTimeoutSeconds < v.activeDeadlineSeconds,
  describe: (v) =>
    `lockTimeoutSeconds (${v.lockTimeoutSeconds}) must be below activeDeadlineSeconds (${v.activeDeadlineSeconds}): a Job waiting for the state lock would be killed before it runs; lower lockTimeoutSeconds or raise activeDeadlineSeconds`,
};

/**
 * The one `TF_` name a spec may set: `TF_TOKEN_<host>`, OpenTofu's credentials for a private module or
 * provider registry (the host with `.` as `_` and `-` as `__`, as OpenTofu reads it; punycode for non-ASCII
 * hosts). Letters, digits, `_` and `-` after the prefix.
 */
export const REGISTRY_TOKEN_ENV = /^TF_TOKEN_[A-Za-z0-9_-]+$/;

/**
 * Env names starting `TF_` or `KUBE_` are rejected, never dropped silently (DESIGN.md section 2), except a
 * registry token `TF_TOKEN_<host>` (issue 25 item 3; {@link registryTokenFromSecret} holds its value to a
 * Secret).
 */
export const envNameNotReserved: CrossFieldRule<{ name: string }> = {
  cel: "!self.name.startsWith('KUBE_') && (!self.name.startsWith('TF_') || self.name.matches('^TF_TOKEN_[A-Za-z0-9_-]+$'))",
  message:
    'env names starting TF_ or KUBE_ are reserved for the runner, except TF_TOKEN_<host> (a registry token); pass Terraform inputs through spec.variables and backend settings through spec.backend',
  messageExpression:
    "'env name ' + self.name + ' is reserved (TF_ and KUBE_ belong to the runner, except TF_TOKEN_<host>); pass Terraform inputs through spec.variables and backend settings through spec.backend'",
  fieldPath: '.name',
  holds: (v) =>
    REGISTRY_TOKEN_ENV.test(v.name) || !RESERVED_ENV_PREFIXES.some((prefix) => v.name.startsWith(prefix)),
  describe: (v) =>
    `env name ${v.name} is reserved (TF_ and KUBE_ belong to the runner, except TF_TOKEN_<host>); pass Terraform inputs through spec.variables and backend settings through spec.backend`,
};

/**
 * A registry token `TF_TOKEN_<host>` comes from a Secret (`valueFrom.secretKeyRef`), never a literal value
 * or a ConfigMap: a credential written into the spec would be readable by everyone who can read the object.
 */
export const registryTokenFromSecret: CrossFieldRule<{
  name: string;
  value?: string | undefined;
  valueFrom?: { secretKeyRef?: unknown; configMapKeyRef?: unknown } | undefined;
}> = {
  cel: "!self.name.startsWith('TF_TOKEN_') || (!has(self.value) && has(self.valueFrom) && has(self.valueFrom.secretKeyRef) && !has(self.valueFrom.configMapKeyRef))",
  message:
    'a TF_TOKEN_<host> registry token takes its value from a Secret only: set valueFrom.secretKeyRef, and neither value nor valueFrom.configMapKeyRef',
  fieldPath: '.valueFrom',
  holds: (v) =>
    !v.name.startsWith('TF_TOKEN_') ||
    (v.value === undefined &&
      v.valueFrom?.secretKeyRef !== undefined &&
      v.valueFrom.configMapKeyRef === undefined),
};

/** The names of the controller's per-object runner identities (src/core/runner-identity.ts). */
export const RUNNER_IDENTITY_PREFIX = 'captf-runner-';

/**
 * Prefixes of the Secrets the controller and OpenTofu name themselves: state (`tfstate-…`), per-run config
 * (`captf-run-…`) and plan keys (`captf-plan-key-…`).
 */
export const RESERVED_SECRET_PREFIXES = ['tfstate-', 'captf-'] as const;

/**
 * `spec.outputs.secretName` may not name a Secret of the controller's or the state backend's (issue 24
 * item 3): the object's runner identity gets `update` on the Secret named, and an object's plan key is
 * owned by it, so the ownership check alone would not keep its runner off that key.
 */
export const outputsSecretNotReserved: CrossFieldRule<{ secretName: string }> = {
  cel: "!self.secretName.startsWith('tfstate-') && !self.secretName.startsWith('captf-')",
  message:
    "outputs.secretName may not start with tfstate- or captf-: those Secrets hold Terraform state and the controller's run config and plan keys; choose another name",
  fieldPath: '.secretName',
  holds: (v) => !RESERVED_SECRET_PREFIXES.some((prefix) => v.secretName.startsWith(prefix)),
};

/**
 * A spec may not name a runner identity as its Jobs' account (issue 16 item 3): `captf-runner-<suffix>` may
 * read and write another object's state, and naming it would run this object's module with those rights.
 */
export const serviceAccountNotRunnerIdentity: CrossFieldRule<{ serviceAccountName?: string | undefined }> = {
  cel: `!has(self.serviceAccountName) || !self.serviceAccountName.startsWith('${RUNNER_IDENTITY_PREFIX}')`,
  message: `serviceAccountName may not start with ${RUNNER_IDENTITY_PREFIX}: those accounts are the controller's per-object runner identities; leave serviceAccountName out to run as this object's own`,
  fieldPath: '.serviceAccountName',
  holds: (v) => !(v.serviceAccountName ?? '').startsWith(RUNNER_IDENTITY_PREFIX),
};

/** An env entry has a literal value or a reference, not both (the kubelet would pick one silently). */
export const envValueOrValueFrom: CrossFieldRule<{ value?: string | undefined; valueFrom?: unknown }> = {
  cel: '!(has(self.value) && has(self.valueFrom))',
  message: 'set value or valueFrom, not both',
  fieldPath: '.valueFrom',
  holds: (v) => !(v.value !== undefined && v.valueFrom !== undefined),
};

/**
 * A quantity given as a string is not empty. A CEL rule, not a `minLength`: the int-or-string form of a
 * structural schema admits no bounds on its branches.
 */
export const quantityNotEmpty: CrossFieldRule<number | string> = {
  // size(), not a comparison with '': its cost is constant, so an unbounded map of quantities stays in budget.
  cel: 'type(self) != string || size(self) > 0',
  message: 'a quantity is a number or a string such as 250m or 512Mi, not empty',
  holds: (v) => v !== '',
};

/** A drift check runs on an interval or on a cron schedule, not both. */
export const driftIntervalOrSchedule: CrossFieldRule<{
  interval?: string | undefined;
  schedule?: string | undefined;
}> = {
  cel: '!(has(self.interval) && has(self.schedule))',
  message: 'set driftCheck.interval or driftCheck.schedule, not both',
  fieldPath: '.schedule',
  holds: (v) => !(v.interval !== undefined && v.schedule !== undefined),
};

/**
 * A field the controller writes on each live object from its module's outputs, which Cluster API would
 * copy from a template into every clone: refused in a template, as CAPA's and CAPO's machine templates
 * refuse `providerID` ("cannot be set in templates"), since one value cannot identify many objects.
 */
function notInTemplate<F extends string>(
  field: F,
  output: string,
): CrossFieldRule<Partial<Record<F, unknown>>> {
  const message = `${field} cannot be set in a template: the controller writes it on each object cloned from the template, from the module output ${output}; remove it`;
  return {
    cel: `!has(self.${field})`,
    message,
    fieldPath: `.${field}`,
    holds: (v) => v[field] === undefined,
  };
}

/** `spec.template.spec.providerID` of a TerraformMachineTemplate (Cluster API sets one per machine). */
export const providerIDNotInTemplate = notInTemplate('providerID', 'providerID');

/** `spec.template.spec.providerIDList` of a TerraformMachinePoolTemplate. */
export const providerIDListNotInTemplate = notInTemplate('providerIDList', 'providerIDList');

/** `spec.template.spec.controlPlaneEndpoint` of a TerraformClusterTemplate. */
export const controlPlaneEndpointNotInTemplate = notInTemplate(
  'controlPlaneEndpoint',
  'controlPlaneEndpoint',
);

/**
 * `spec.template.spec.outputs` of any template: every clone would name the same Secret, which only the
 * first clone owns, so the others' Jobs would all be refused (issue 24 item 3).
 */
export const outputsNotInTemplate: CrossFieldRule<{ outputs?: unknown }> = {
  cel: '!has(self.outputs)',
  message:
    'outputs cannot be set in a template: every object cloned from it would name the same Secret, which only one of them can own; set outputs.secretName on each object instead',
  fieldPath: '.outputs',
  holds: (v) => v.outputs === undefined,
};

/** Approving names the approver (DESIGN.md section 11); the admission policy checks it is the caller. */
export const approvedByWhenApproved: CrossFieldRule<{ approved: boolean; approvedBy?: string | undefined }> =
  {
    cel: "!self.approved || (has(self.approvedBy) && self.approvedBy != '')",
    message: 'set spec.approvedBy to your own user name when you set spec.approved: true',
    fieldPath: '.approvedBy',
    holds: (v) => !v.approved || (v.approvedBy !== undefined && v.approvedBy !== ''),
  };

/** Approval is irreversible (DESIGN.md section 11): a transition rule on `spec.approved`. */
export const approvalIrreversible: TransitionRule = {
  cel: 'self || !oldSelf',
  message:
    'an approval cannot be withdrawn; leave the plan alone and it is superseded by the next input change',
};

/** The approver of an approved plan never changes (a transition rule on the plan's spec). */
export const approverFixed: TransitionRule = {
  cel: '!oldSelf.approved || (has(self.approvedBy) && has(oldSelf.approvedBy) && self.approvedBy == oldSelf.approvedBy)',
  message: 'spec.approvedBy cannot change once the plan is approved',
  fieldPath: '.approvedBy',
};

/** What a plan binds (target, inputs, digest, counts) is fixed once written (a transition rule). */
export const planBindingFixed: TransitionRule = {
  cel: 'self.targetRef == oldSelf.targetRef && self.inputsHash == oldSelf.inputsHash && self.digest == oldSelf.digest && self.add == oldSelf.add && self.change == oldSelf.change && self.destroy == oldSelf.destroy',
  message:
    'a plan binds one target, inputs hash and digest; these fields cannot change (a new plan is created instead)',
};

/**
 * The readable plan is what an approver reads (issue 24): fixed once written, and never removed, so no
 * one with edit rights can show an approver a different plan than the one the digest binds.
 */
export const planChangesFixed: TransitionRule = {
  cel: 'has(self.changes) == has(oldSelf.changes) && (!has(self.changes) || self.changes == oldSelf.changes)',
  message: 'spec.changes is the plan as made; it cannot change (a new plan is created instead)',
};

/**
 * Only a `Pending` plan can be approved (DESIGN.md section 11: applied, superseded and failed plans cannot).
 * A transition rule on the whole object, since it reads `status.phase`.
 */
export const approveOnlyPending: TransitionRule = {
  cel: "!self.spec.approved || oldSelf.spec.approved || !has(self.status) || !has(self.status.phase) || self.status.phase == 'Pending'",
  message: 'only a Pending plan can be approved; this plan is Applied, Superseded or Failed',
  messageExpression:
    "'only a Pending plan can be approved; this plan is ' + (has(self.status) && has(self.status.phase) ? self.status.phase : 'not pending')",
  fieldPath: '.spec.approved',
};

/** The CRD form of a rule (`x-kubernetes-validations` entry). */
export interface CelValidation {
  rule: string;
  message: string;
  messageExpression?: string;
  fieldPath?: string;
}

/** The `x-kubernetes-validations` entry of one rule. */
export function celValidation(rule: CelRule): CelValidation {
  return {
    rule: rule.cel,
    message: rule.message,
    ...(rule.messageExpression ? { messageExpression: rule.messageExpression } : {}),
    ...(rule.fieldPath ? { fieldPath: rule.fieldPath } : {}),
  };
}

/**
 * Attaches rules to a schema: zod checks the TypeScript side of each cross-field rule (issue at the rule's
 * field, its `params.cel` the rule's CEL) and the CRD generator reads every rule's CEL side from the
 * schema's metadata. Rules already on the schema are kept (a template's spec adds its own to the cloned
 * kind's).
 */
export function withRules<S extends z.ZodType>(
  schema: S,
  rules: readonly (CrossFieldRule<z.output<S>> | TransitionRule)[],
): S {
  const checked = schema.superRefine((value, ctx) => {
    for (const rule of rules) {
      if ('holds' in rule && !rule.holds(value)) {
        ctx.addIssue({
          code: 'custom',
          message: ruleMessage(rule, value),
          path: rule.fieldPath ? rule.fieldPath.slice(1).split('.') : [],
          // Marks the issue as one the API server also raises (the CRD carries the same rule as CEL).
          params: { cel: rule.cel },
        });
      }
    }
  });
  const inherited = (schema.meta()?.['x-kubernetes-validations'] ?? []) as CelValidation[];
  return checked.meta({ 'x-kubernetes-validations': [...inherited, ...rules.map(celValidation)] });
}
