import { randomUUID } from 'node:crypto';
import type { RedisClient } from './client.ts';
import { closeRedisClient, createRedisClient, type RedisClientOptions, waitUntilReady } from './client.ts';
import { ClusterFactsStore } from './cluster-facts.ts';
import { Dependents } from './dependents.ts';
import {
  markEventSeen,
  markOwnWrite,
  type SeenCheck,
  type VersionMark,
  versionMarked,
} from './event-dedupe.ts';
import { IdentityChecks } from './identity-checks.ts';
import { JobSlots } from './job-slots.ts';
import { KeyLayout, type ObjectId } from './keys.ts';
import { NewestVersions } from './newest-seen.ts';
import { RunLeases } from './run-lease.ts';
import { RequeueSchedule } from './schedule.ts';
import {
  releaseTokenLease,
  renewTokenLease,
  type TokenRelease,
  type TokenRenew,
  type TokenTake,
  takeTokenLease,
} from './token-lease.ts';
import { attempt, type Unknown } from './unknown.ts';

/** DESIGN.md section 5 step 1: the step lock lives 30 s. */
export const STEP_LOCK_TTL_MS = 30_000;

/**
 * Everything the controller keeps in Redis (DESIGN.md sections 5 and 8), none of which the API server
 * could not rebuild. Every call answers a tagged value; an outage is `{ kind: 'unknown' }`, never an
 * exception and never "held". Only a reply of the wrong shape (a bug) throws.
 */
export interface RedisAdapter {
  /** The per-object step lock (SET NX PX, 30 s, random token). */
  takeStepLock(object: ObjectId): Promise<TokenTake>;
  extendStepLock(object: ObjectId, token: string): Promise<TokenRenew>;
  releaseStepLock(object: ObjectId, token: string): Promise<TokenRelease>;
  /** Whether a step of the object holds its step lock now (one EXISTS). */
  stepLockHeld(object: ObjectId): Promise<{ kind: 'answered'; held: boolean } | Unknown>;
  /** A named single-holder lease (`sweep`, `relay-leader`); `holder` identifies the caller. */
  takeLease(name: string, holder: string, ttlSeconds: number): Promise<TokenTake>;
  renewLease(name: string, holder: string, ttlSeconds: number): Promise<TokenRenew>;
  releaseLease(name: string, holder: string): Promise<TokenRelease>;
  /** Run and cluster leases with fencing tokens. */
  readonly runLeases: RunLeases;
  /** Job slots per installation and per Cluster API cluster. */
  readonly jobSlots: JobSlots;
  /** The requeue schedule. */
  readonly schedule: RequeueSchedule;
  /** Objects waiting for others (wake-ups when a dependency becomes ready). */
  readonly dependents: Dependents;
  /** The newest version of each object `/events` handled, with its content digest. */
  readonly newest: NewestVersions;
  /** The runner identities found complete, per object uid (src/adapters/redis/identity-checks.ts). */
  readonly identityChecks: IdentityChecks;
  /** What members read of their cluster, cached per cluster (issue 22). */
  readonly clusterFacts: ClusterFactsStore;
  /** Event dedupe: `first` once per `uid@resourceVersion` within `ttlSeconds`. */
  markEventSeen(event: { uid: string; resourceVersion: string }, ttlSeconds: number): Promise<SeenCheck>;
  /** A version a step wrote of its object: its Resource-mode event is that write's echo (event-dedupe.ts). */
  markOwnWrite(event: { uid: string; resourceVersion: string }): Promise<{ kind: 'marked' } | Unknown>;
  /** Whether a version carries a mark (`seen` by markEventSeen, `own` by markOwnWrite). */
  versionMarked(
    event: { uid: string; resourceVersion: string },
    mark: VersionMark,
  ): Promise<{ kind: 'answered'; marked: boolean } | Unknown>;
  /** PING, for `/readyz`. */
  ping(): Promise<{ kind: 'pong' } | Unknown>;
  /** Waits for the first connection; rejects after `timeoutMs` (calls before that answer `unknown`). */
  waitUntilReady(timeoutMs: number): Promise<void>;
  /** Closes the connection. */
  close(): Promise<void>;
  /** The key layout (tests and the sweep read keys through it). */
  readonly keys: KeyLayout;
  /** The underlying client (tests inspect keys with it; production code uses the methods above). */
  readonly client: RedisClient;
}

export type RedisAdapterOptions = RedisClientOptions & {
  /** Prefix of every key, e.g. `captf` (tests use a random one so runs never see each other's keys). */
  keyPrefix: string;
};

/** Creates the adapter; the client connects in the background. */
export function createRedisAdapter(options: RedisAdapterOptions): RedisAdapter {
  const client = createRedisClient(options);
  const keys = new KeyLayout(options.keyPrefix);
  return {
    takeStepLock: (object) => takeTokenLease(client, keys.stepLock(object), randomUUID(), STEP_LOCK_TTL_MS),
    extendStepLock: (object, token) =>
      renewTokenLease(client, keys.stepLock(object), token, STEP_LOCK_TTL_MS),
    releaseStepLock: (object, token) => releaseTokenLease(client, keys.stepLock(object), token),
    stepLockHeld: async (object) => {
      const answer = await attempt(() => client.exists(keys.stepLock(object)));
      return answer.kind === 'unknown' ? answer : { kind: 'answered', held: answer.reply === 1 };
    },
    takeLease: (name, holder, ttlSeconds) =>
      takeTokenLease(client, keys.namedLease(name), holder, ttlSeconds * 1000),
    renewLease: (name, holder, ttlSeconds) =>
      renewTokenLease(client, keys.namedLease(name), holder, ttlSeconds * 1000),
    releaseLease: (name, holder) => releaseTokenLease(client, keys.namedLease(name), holder),
    runLeases: new RunLeases(client, keys),
    jobSlots: new JobSlots(client, keys),
    schedule: new RequeueSchedule(client, keys),
    dependents: new Dependents(client, keys),
    newest: new NewestVersions(client, keys),
    identityChecks: new IdentityChecks(client, keys),
    clusterFacts: new ClusterFactsStore(client, keys),
    markEventSeen: (event, ttlSeconds) => markEventSeen(client, keys, event, ttlSeconds),
    markOwnWrite: (event) => markOwnWrite(client, keys, event),
    versionMarked: (event, mark) => versionMarked(client, keys, event, mark),
    ping: async () => {
      const answer = await attempt(() => client.ping());
      return answer.kind === 'unknown' ? answer : { kind: 'pong' };
    },
    waitUntilReady: (timeoutMs) => waitUntilReady(client, timeoutMs),
    close: async () => {
      closeRedisClient(client);
    },
    keys,
    client,
  };
}
