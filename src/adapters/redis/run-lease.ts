import type { TargetKind as ObjectKind } from '../../schemas/kinds/api-group.ts';
import type { Op } from '../../schemas/result.ts';
import type { RedisClient } from './client.ts';
import type { KeyLayout, ObjectId } from './keys.ts';
import { objectIdString } from './keys.ts';
import { replyArray, replyNumber, replyString } from './reply.ts';
import { callScript } from './scripts.ts';
import { attempt, type Unknown } from './unknown.ts';

/**
 * Run leases and cluster leases with fencing tokens (DESIGN.md section 5 step 6; C16, C17). A lease's
 * value is `<fence> <job name>`; the fence comes from INCR of the lease group's counter at grant time.
 * Taking is one script (never read-then-write); renew and release compare the whole value in Lua.
 * The cluster/machine writer preference is decided inside the same script, because a cluster's lease and
 * its machines' leases share one hash slot (keys.ts).
 */

/**
 * How a take treats the cluster lease:
 * - `solo`: run lease only (objects without a Cluster API cluster; TerraformCluster drift/refresh);
 * - `cluster-writer`: TerraformCluster apply/destroy: run lease and cluster lease, and the number of live
 *   machine/pool apply-destroy leases is reported (the caller keeps its leases and waits while it is > 0);
 * - `member-writer`: machine/pool apply/destroy: refused while the cluster lease is live; registered so the
 *   cluster can see it;
 * - `member-reader`: machine/pool drift/refresh: refused while the cluster lease is live.
 */
export const RUN_LEASE_ROLES = ['solo', 'cluster-writer', 'member-writer', 'member-reader'] as const;
export type RunLeaseRole = (typeof RUN_LEASE_ROLES)[number];

/** The role of one object's op (pure): see RunLeaseRole. */
export function runLeaseRoleOf(kind: ObjectKind, op: Op, clusterName: string | undefined): RunLeaseRole {
  if (clusterName === undefined) return 'solo';
  const writes = op === 'apply' || op === 'destroy';
  if (kind === 'TerraformCluster') return writes ? 'cluster-writer' : 'solo';
  return writes ? 'member-writer' : 'member-reader';
}

/** Whose lease: the object and its Cluster API cluster name (`cluster.x-k8s.io/cluster-name`), if any. */
export interface RunLeaseScope {
  object: ObjectId;
  clusterName?: string;
}

/** One grant: the Job name and the fencing token issued with it. */
export interface RunLeaseToken {
  holder: string;
  fence: number;
}

export type RunLeaseTake =
  /**
   * The caller holds the lease. `retaken`: it already held it under the same Job name (a retried step);
   * the fence is then the original grant's. `liveMemberLeases`: for `cluster-writer`, machine/pool
   * apply-destroy leases still live in the cluster (wait while > 0); 0 for other roles.
   */
  | { kind: 'acquired'; token: RunLeaseToken; retaken: boolean; liveMemberLeases: number }
  /** Another Job holds the object's run lease (or, for `cluster-writer`, the cluster lease). */
  | { kind: 'held'; holder: string; fence: number }
  /** `member-*` only: the cluster lease is live; nothing was taken (`WaitingForClusterOperation`). */
  | { kind: 'cluster-busy'; holder: string; fence: number }
  | Unknown;
export type RunLeaseRenew = { kind: 'renewed' } | { kind: 'lost' } | Unknown;
export type RunLeaseRelease = { kind: 'released' } | { kind: 'not-held' } | Unknown;
export type RunLeaseRead = { kind: 'free' } | { kind: 'held'; token: RunLeaseToken } | Unknown;
/** A member's leases now: its own run lease's grant and its cluster lease's grant (each if live). */
export type MemberLeaseRead =
  | { kind: 'read'; run: RunLeaseToken | undefined; clusterLease: RunLeaseToken | undefined }
  | Unknown;
/** A Cluster API cluster's leases now: the cluster lease's grant (if live) and its live member leases. */
export type ClusterLeaseRead =
  | { kind: 'read'; clusterLease: RunLeaseToken | undefined; liveMemberLeases: number }
  | Unknown;

function leaseValue(token: RunLeaseToken): string {
  return `${token.fence} ${token.holder}`;
}

/** Parses a lease value `<fence> <holder>`; throws on a malformed one (a bug: only our scripts write it). */
function tokenOf(value: string, key: string): RunLeaseToken {
  const separator = value.indexOf(' ');
  if (separator < 0) throw new Error(`read lease ${key}: malformed value`);
  return { fence: Number(value.slice(0, separator)), holder: value.slice(separator + 1) };
}

/** Run-lease operations over one client and key layout. */
export class RunLeases {
  readonly #client: RedisClient;
  readonly #keys: KeyLayout;

  constructor(client: RedisClient, keys: KeyLayout) {
    this.#client = client;
    this.#keys = keys;
  }

  /** Takes the run lease for `holder` (the Job name) for `ttlSeconds`, in `role`. */
  async take(
    scope: RunLeaseScope,
    holder: string,
    role: RunLeaseRole,
    ttlSeconds: number,
  ): Promise<RunLeaseTake> {
    const keys = this.#keys.leaseGroup(scope.object, scope.clusterName);
    const answer = await attempt(() =>
      callScript(this.#client, 'captfRunTake', [
        keys.run,
        keys.cluster,
        keys.members,
        keys.fence,
        holder,
        ttlSeconds * 1000,
        role,
        objectIdString(scope.object),
      ]),
    );
    if (answer.kind === 'unknown') return answer;
    const items = replyArray(answer.reply, 'captfRunTake');
    const verdict = replyString(items, 0, 'captfRunTake');
    if (verdict === 'acquired') {
      return {
        kind: 'acquired',
        token: { holder, fence: replyNumber(items, 1, 'captfRunTake') },
        liveMemberLeases: replyNumber(items, 2, 'captfRunTake'),
        retaken: replyNumber(items, 3, 'captfRunTake') === 1,
      };
    }
    const other = {
      holder: replyString(items, 1, 'captfRunTake'),
      fence: replyNumber(items, 2, 'captfRunTake'),
    };
    if (verdict === 'held') return { kind: 'held', ...other };
    if (verdict === 'cluster-busy') return { kind: 'cluster-busy', ...other };
    throw new Error(`read captfRunTake reply: unknown verdict ${verdict}`);
  }

  /** Pushes the expiry of the caller's grant (and its cluster lease / member entry) to `ttlSeconds` from now. */
  async renew(scope: RunLeaseScope, token: RunLeaseToken, ttlSeconds: number): Promise<RunLeaseRenew> {
    const keys = this.#keys.leaseGroup(scope.object, scope.clusterName);
    const answer = await attempt(() =>
      callScript(this.#client, 'captfRunRenew', [
        keys.run,
        keys.cluster,
        keys.members,
        leaseValue(token),
        ttlSeconds * 1000,
        objectIdString(scope.object),
      ]),
    );
    if (answer.kind === 'unknown') return answer;
    return Number(answer.reply) === 1 ? { kind: 'renewed' } : { kind: 'lost' };
  }

  /** Releases the caller's grant; a lease held under another token is left untouched (C17). */
  async release(scope: RunLeaseScope, token: RunLeaseToken): Promise<RunLeaseRelease> {
    const keys = this.#keys.leaseGroup(scope.object, scope.clusterName);
    const answer = await attempt(() =>
      callScript(this.#client, 'captfRunRelease', [
        keys.run,
        keys.cluster,
        keys.members,
        leaseValue(token),
        objectIdString(scope.object),
      ]),
    );
    if (answer.kind === 'unknown') return answer;
    return Number(answer.reply) === 1 ? { kind: 'released' } : { kind: 'not-held' };
  }

  /** Who holds the object's run lease now (for a step that knows only the Job name it expects). */
  async read(scope: RunLeaseScope): Promise<RunLeaseRead> {
    const key = this.#keys.leaseGroup(scope.object, scope.clusterName).run;
    const answer = await attempt(() => this.#client.get(key));
    if (answer.kind === 'unknown') return answer;
    return answer.reply === null ? { kind: 'free' } : { kind: 'held', token: tokenOf(answer.reply, key) };
  }

  /**
   * Read-only, one round trip: a member's own run lease and its cluster's lease (what a member's take
   * would meet; the take itself decides atomically).
   */
  async readMember(scope: RunLeaseScope & { clusterName: string }): Promise<MemberLeaseRead> {
    const keys = this.#keys.leaseGroup(scope.object, scope.clusterName);
    const answer = await attempt(() => callScript(this.#client, 'captfMemberRead', [keys.run, keys.cluster]));
    if (answer.kind === 'unknown') return answer;
    const items = replyArray(answer.reply, 'captfMemberRead');
    const run = replyString(items, 0, 'captfMemberRead');
    const cluster = replyString(items, 1, 'captfMemberRead');
    return {
      kind: 'read',
      run: run === '' ? undefined : tokenOf(run, keys.run),
      clusterLease: cluster === '' ? undefined : tokenOf(cluster, keys.cluster),
    };
  }

  /**
   * Read-only: is the cluster lease live, and how many machine/pool apply-destroy leases are (for dry runs
   * and explanations; the take itself re-checks atomically).
   */
  async readCluster(namespace: string, clusterName: string): Promise<ClusterLeaseRead> {
    const keys = this.#keys.leaseGroup(
      { kind: 'TerraformCluster', namespace, name: clusterName },
      clusterName,
    );
    const answer = await attempt(() =>
      callScript(this.#client, 'captfClusterRead', [keys.cluster, keys.members]),
    );
    if (answer.kind === 'unknown') return answer;
    const items = replyArray(answer.reply, 'captfClusterRead');
    const value = replyString(items, 0, 'captfClusterRead');
    return {
      kind: 'read',
      clusterLease: value === '' ? undefined : tokenOf(value, keys.cluster),
      liveMemberLeases: replyNumber(items, 1, 'captfClusterRead'),
    };
  }
}
