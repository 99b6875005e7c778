import type { JobsPolicy } from '../schemas/kinds/jobs-policy.ts';
import type { TargetSpec, TargetStatus } from '../schemas/kinds/target.ts';
import type { TerraformPlan } from '../schemas/kinds/terraform-plan.ts';
import type { CapiContext } from './cluster-api.ts';
import type { JobRecord } from './job-record.ts';
import type { ObjectRef } from './object-ref.ts';
import type { PreambleMeta } from './preamble.ts';
import type { VariablesSecretOptIns } from './variables-opt-in.ts';
import type { JobView } from './views.ts';

/**
 * The live world of one object at the start of a step (DESIGN.md section 5 step 2), as the planner reads
 * it: read from the API server by src/step/read.ts, never from an event payload. Plain data; the pods and
 * the Job slot usage are read only when the plan asks for them (src/core/planner.ts).
 */

/** Secret data the object's inputs reference, by Secret name; undefined for a Secret that does not exist. */
export type ReferencedSecrets = ReadonlyMap<string, Readonly<Record<string, string>> | undefined>;

/** The owning TerraformCluster of a machine or pool, as far as the step needs it. */
export interface OwningCluster {
  name: string;
  /** `spec.defaults.jobs`, merged under the machine's own `spec.jobs`. */
  defaultsJobs?: JobsPolicy;
  /** `status.ready`: machines apply only once the cluster infrastructure is there. */
  ready: boolean;
  /** `status.exports`: the cluster module's `exports` output, handed to machine and pool modules. */
  exports?: Record<string, unknown>;
  /**
   * Paths of the cluster's spec or status fields that do not parse: its defaults and exports are unknown,
   * so nothing but a destroy starts for the machine (it waits as for a cluster that is not ready).
   */
  unreadable?: string[];
}

/** One object and what belongs to it. */
export interface Snapshot {
  ref: ObjectRef;
  uid: string;
  generation: number;
  resourceVersion: string;
  meta: PreambleMeta;
  /** `metadata.managedFields` as read, unchecked: who last changed the spec (src/core/plan-manifest.ts). */
  managedFields?: unknown;
  /** The parsed spec; `specProblem` says why when it does not parse. */
  spec: TargetSpec | undefined;
  specProblem?: string;
  /**
   * The parsed status; when it does not parse, only its top-level fields that parse on their own, and
   * `statusUnreadable` names the fields that do not (issue 23: nothing runs on a status read as empty).
   */
  status: TargetStatus;
  statusUnreadable?: string[];
  /** `cluster.x-k8s.io/cluster-name`, when the object belongs to a Cluster API cluster. */
  clusterName?: string;
  owningCluster?: OwningCluster;
  /**
   * Some of the cluster facts (`owningCluster`, the Cluster's pause and infrastructure) came from the cache
   * (src/core/cluster-facts.ts): a plan that does more than wait is made again from a live read.
   */
  clusterFactsCached?: true;
  /** Cluster API pause: the object's annotation or the Cluster's `spec.paused`. */
  paused: boolean;
  /** What Cluster API says about the object (src/core/cluster-api.ts); undefined for standalone objects. */
  capi?: CapiContext;
  /** An owner reference of Cluster API's group (a TerraformCluster's Cluster, a machine's Machine). */
  ownedByClusterApi?: boolean;
  /** The object's Jobs (label `captf.io/owner-uid`); empty while `jobsUnread`. */
  jobs: JobView[];
  records: JobRecord[];
  /** The Jobs were not listed (src/core/jobs-read.ts): the planner asks for them unless it rests idle. */
  jobsUnread?: true;
  /** The TerraformPlan named by `status.pendingPlanRef`, when it exists. */
  pendingPlan?: TerraformPlan;
  referencedSecrets: ReferencedSecrets;
  /**
   * Whether each existing Secret that `variablesFrom` or the effective `env[].valueFrom` reads carries the
   * opt-in label (src/core/variables-opt-in.ts).
   */
  variablesSecretOptIns: VariablesSecretOptIns;
  /** The inputs hash of the live spec (src/core/inputs-hash.ts); '' when the spec does not parse. */
  inputsHash: string;
}
