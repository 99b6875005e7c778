import { createHash } from 'node:crypto';
import type { Op } from '../schemas/result.ts';
import { canonicalJson } from './canonical-json.ts';
import { type CapiContext, DEFAULT_BOOTSTRAP_FORMAT } from './cluster-api.ts';
import type { ObjectRef } from './object-ref.ts';

/**
 * The module input contract (docs/module-contract.md, issue 11 item 3): what the controller hands a module
 * besides `spec.variables`. They travel as `TF_VAR_<name>` in the runtime's environment, so a module that
 * declares none of them still works (Terraform and OpenTofu ignore `TF_VAR_` of undeclared variables), and a
 * `spec.variables` entry of the same name wins (a variables file beats the environment). Those Cluster API
 * hands over are part of the inputs hash (a new Kubernetes version or new bootstrap data is an input
 * change); `cluster_name` and `machine_name`, which follow from the object's own label and name, are not,
 * so that objects applied before the contract existed do not all plan again.
 */

/** Inputs that follow from the object itself, left out of the inputs hash. */
const OWN_INPUTS: ReadonlySet<string> = new Set(['cluster_name', 'machine_name']);

/** One run's contract inputs: values by variable name, and the names whose values are secret. */
export interface ModuleInputs {
  values: Record<string, unknown>;
  /** `bootstrap_data`: redacted everywhere, never in status, Events, logs or the result. */
  sensitive: string[];
}

/** Everything the contract inputs are made of. */
export interface ModuleInputSource {
  ref: ObjectRef;
  /** `cluster.x-k8s.io/cluster-name`. */
  clusterName?: string;
  capi?: CapiContext;
  /** The owning TerraformCluster's `status.exports` (its module's `exports` output), for machines and pools. */
  clusterExports?: Record<string, unknown>;
  /** The op of the run the inputs are for; undefined where no run is meant (the inputs hash). */
  op?: Op;
}

/**
 * The contract inputs of the object: `cluster_name` for every kind in a cluster; for machines
 * `machine_name` (the owning Machine's name, else the object's), and from a Cluster API owner
 * `kubernetes_version`, `control_plane`, `failure_domain`, `bootstrap_data` (sensitive) and
 * `bootstrap_format`; for pools `replicas`; for machines and pools `cluster_exports`. Absent facts are
 * left out (the module's default applies), never sent empty, but for one: a destroy of a machine or pool
 * without bootstrap data gets `bootstrap_data = ""` and `bootstrap_format = "cloud-config"`. A Machine's
 * deletion deletes its bootstrap config (whose Secret goes with it) before or beside the infrastructure
 * machine, so a module that declares `bootstrap_data` without a default could otherwise never be
 * destroyed (docs/module-contract.md). The stand-in is no fact: it is not secret and it is not in the inputs hash (which
 * is computed without an op).
 */
export function moduleInputsOf(source: ModuleInputSource): ModuleInputs {
  const values: Record<string, unknown> = {};
  const sensitive: string[] = [];
  if (source.clusterName !== undefined) values.cluster_name = source.clusterName;
  if (source.ref.kind === 'TerraformCluster') return { values, sensitive };
  const owner = source.capi?.owner;
  if (source.ref.kind === 'TerraformMachine') values.machine_name = owner?.name ?? source.ref.name;
  if (owner !== undefined) {
    if (owner.version !== undefined) values.kubernetes_version = owner.version;
    values.control_plane = owner.controlPlane;
    if (owner.failureDomain !== undefined) values.failure_domain = owner.failureDomain;
    if (owner.replicas !== undefined && source.ref.kind === 'TerraformMachinePool')
      values.replicas = owner.replicas;
  }
  const bootstrap = source.capi?.bootstrapData;
  if (bootstrap !== undefined) {
    values.bootstrap_data = bootstrap.value;
    values.bootstrap_format = bootstrap.format;
    sensitive.push('bootstrap_data');
  } else if (source.op === 'destroy') {
    values.bootstrap_data = '';
    values.bootstrap_format = DEFAULT_BOOTSTRAP_FORMAT;
  }
  if (source.clusterExports !== undefined) values.cluster_exports = source.clusterExports;
  return { values, sensitive };
}

/**
 * SHA-256 (hex) over the contract inputs that come from Cluster API (bootstrap data included: the digest
 * reveals nothing of it); undefined when there are none, so a standalone object's inputs hash is unchanged.
 */
export function moduleInputsDigest(inputs: ModuleInputs): string | undefined {
  const hashed = Object.fromEntries(Object.entries(inputs.values).filter(([name]) => !OWN_INPUTS.has(name)));
  if (Object.keys(hashed).length === 0) return undefined;
  return createHash('sha256').update(canonicalJson(hashed)).digest('hex');
}
