import { createHash } from 'node:crypto';

/**
 * The Redis key layout (DESIGN.md section 8: "every Lua script touches keys of one hash slot only"). Every
 * key a script touches shares the `{…}` hash tag of its group, so the same scripts run on Redis Cluster:
 *
 * | Key                                   | Type   | What                                                  |
 * |---------------------------------------|--------|-------------------------------------------------------|
 * | `P:{obj:<kind>/<ns>/<name>}:step`     | string | step lock of one object (token, PX 30 s)              |
 * | `P:{<group>}:run:<kind>/<ns>/<name>`  | string | run lease: `<fence> <job name>`                       |
 * | `P:{<group>}:cluster`                 | string | cluster lease of a Cluster API cluster                |
 * | `P:{<group>}:members`                 | zset   | machine/pool apply-destroy leases: object → expiry ms |
 * | `P:{<group>}:fence`                   | int    | fencing counter (INCR) of the group (PX a week)       |
 * | `P:{slots}:installation`              | zset   | Job slots of the installation: `ns/job` → expiry ms   |
 * | `P:{slots}:cluster:<ns>/<cluster>`    | zset   | Job slots of one Cluster API cluster                  |
 * | `P:{schedule:<i>}:due`                | zset   | requeue schedule shard i: `kind/ns/name` → due ms     |
 * | `P:seen:<uid>@<rv>`                   | string | event dedupe marker (EX)                              |
 * | `P:{lease:<name>}`                    | string | a single-holder lease (sweep, relay leader)           |
 * | `P:{obj:<kind>/<ns>/<name>}:dependents` | set  | objects waiting for this one (`kind/ns/name`)         |
 * | `P:{obj:<kind>/<ns>/<name>}:newest`   | string | newest version handled: `<uid> <rv> <digest>` (EX)    |
 * | `P:identity:<uid>`                    | string | runner identity found complete: its digest (EX)       |
 * | `P:{facts:<ns>/<cluster>}:<part>`     | string | cached cluster facts: `<uid> <rv> <json>` (EX)        |
 *
 * `<group>` is `capi:<ns>/<cluster>` for objects of a Cluster API cluster (so a cluster's lease and its
 * machines' leases live in one slot and are checked in one script) and `obj:<kind>/<ns>/<name>` otherwise.
 * All slot counters share the `{slots}` tag so one script checks both limits atomically; they change once
 * per Job start or end, so the single slot is not hot.
 */

/** Number of requeue schedule shards: a small fixed number so `/tick` claims with a few calls. */
export const SCHEDULE_SHARDS = 8;

/** One object, as the schedule member and lease names spell it: `kind/namespace/name`. */
export interface ObjectId {
  kind: string;
  namespace: string;
  name: string;
}

/** `kind/namespace/name` (DESIGN.md section 8: the schedule member). */
export function objectIdString(object: ObjectId): string {
  return `${object.kind}/${object.namespace}/${object.name}`;
}

/**
 * The lease group of an object: its Cluster API cluster (`cluster.x-k8s.io/cluster-name`) when it has one,
 * else the object itself.
 */
export function leaseGroupOf(object: ObjectId, clusterName: string | undefined): string {
  return clusterName === undefined
    ? `obj:${objectIdString(object)}`
    : `capi:${object.namespace}/${clusterName}`;
}

/** The keys of one lease group, all in one hash slot. */
export interface LeaseGroupKeys {
  run: string;
  cluster: string;
  members: string;
  fence: string;
}

/** Builds every key from one prefix (tests use a random one). */
export class KeyLayout {
  readonly prefix: string;

  constructor(prefix: string) {
    this.prefix = prefix;
  }

  stepLock(object: ObjectId): string {
    return `${this.prefix}:{obj:${objectIdString(object)}}:step`;
  }

  leaseGroup(object: ObjectId, clusterName: string | undefined): LeaseGroupKeys {
    const tag = `${this.prefix}:{${leaseGroupOf(object, clusterName)}}`;
    return {
      run: `${tag}:run:${objectIdString(object)}`,
      cluster: `${tag}:cluster`,
      members: `${tag}:members`,
      fence: `${tag}:fence`,
    };
  }

  installationSlots(): string {
    return `${this.prefix}:{slots}:installation`;
  }

  clusterSlots(namespace: string, clusterName: string): string {
    return `${this.prefix}:{slots}:cluster:${namespace}/${clusterName}`;
  }

  scheduleShard(index: number): string {
    return `${this.prefix}:{schedule:${index}}:due`;
  }

  /** The shard of a schedule member: stable across processes (SHA-1, not Math.random or a per-process seed). */
  scheduleShardOf(member: string): string {
    return this.scheduleShard(createHash('sha1').update(member).digest().readUInt32BE(0) % SCHEDULE_SHARDS);
  }

  seen(uid: string, resourceVersion: string): string {
    return `${this.prefix}:seen:${uid}@${resourceVersion}`;
  }

  /** A version of one of our objects written by a step (src/adapters/redis/event-dedupe.ts `markOwnWrite`). */
  ownWrite(uid: string, resourceVersion: string): string {
    return `${this.prefix}:own:${uid}@${resourceVersion}`;
  }

  dependents(object: ObjectId): string {
    return `${this.prefix}:{obj:${objectIdString(object)}}:dependents`;
  }

  newest(object: ObjectId): string {
    return `${this.prefix}:{obj:${objectIdString(object)}}:newest`;
  }

  identityCheck(uid: string): string {
    return `${this.prefix}:identity:${uid}`;
  }

  /**
   * One part of a cluster's cached facts (`owning`: its TerraformCluster, `capi`: its Cluster API Cluster);
   * both parts share the cluster's tag, so one MGET reads them on Redis Cluster too.
   */
  clusterFacts(namespace: string, clusterName: string, part: 'owning' | 'capi'): string {
    return `${this.prefix}:{facts:${namespace}/${clusterName}}:${part}`;
  }

  namedLease(name: string): string {
    return `${this.prefix}:{lease:${name}}`;
  }
}
