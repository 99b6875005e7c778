import type { RedisClient } from './client.ts';
import { type KeyLayout, SCHEDULE_SHARDS } from './keys.ts';
import { replyArray, replyNumber, replyString } from './reply.ts';
import { callScript } from './scripts.ts';
import { attempt, type Unknown } from './unknown.ts';

/**
 * The requeue schedule (DESIGN.md section 8): sorted sets of `kind/namespace/name` scored with the due
 * time in ms (server clock), sharded by a fixed number of hash tags. Adding keeps the earliest due time.
 * A claim moves due members to `now + visibility` and hands back that score as the claim's receipt; the
 * acknowledgement removes (or reschedules) a member only while it still carries that receipt, so a crashed
 * claim reappears after the visibility timeout and a newer, earlier requeue is never lost.
 */

export type ScheduleAdd = { kind: 'scheduled'; dueMs: number } | Unknown;

/** One claimed member and its receipt (pass both to `ack`). */
export interface Claim {
  member: string;
  claimScore: number;
}
/** Members claimed so far; `unknown` is set when a shard could not be reached (others may have answered). */
export interface ClaimResult {
  kind: 'claimed';
  claims: Claim[];
  unknown?: Unknown;
}
/** `acknowledged`: our claim was still there; `superseded`: someone re-added the member meanwhile. */
export type ScheduleAck = { kind: 'acknowledged' } | { kind: 'superseded' } | Unknown;
export type ScheduledAt = { kind: 'scheduled'; dueMs: number } | { kind: 'absent' } | Unknown;
export type ScheduleRemove = { kind: 'removed' } | Unknown;

/** Schedule operations over one client and key layout. */
export class RequeueSchedule {
  readonly #client: RedisClient;
  readonly #keys: KeyLayout;

  constructor(client: RedisClient, keys: KeyLayout) {
    this.#client = client;
    this.#keys = keys;
  }

  /** Schedules `member` `delayMs` from now (server clock), unless it is already due earlier. */
  async add(member: string, delayMs: number): Promise<ScheduleAdd> {
    const answer = await attempt(() =>
      callScript(this.#client, 'captfScheduleAdd', [
        this.#keys.scheduleShardOf(member),
        member,
        Math.max(0, Math.round(delayMs)),
      ]),
    );
    if (answer.kind === 'unknown') return answer;
    return { kind: 'scheduled', dueMs: Number(answer.reply) };
  }

  /**
   * Schedules `member` `delayMs` from now only when it has no requeue at all (a claim counts as one): the
   * sweep's guarantee that every object is looked at again, without moving anyone's requeue forward.
   */
  async ensure(member: string, delayMs: number): Promise<ScheduleAdd> {
    const answer = await attempt(() =>
      callScript(this.#client, 'captfScheduleEnsure', [
        this.#keys.scheduleShardOf(member),
        member,
        Math.max(0, Math.round(delayMs)),
      ]),
    );
    if (answer.kind === 'unknown') return answer;
    return { kind: 'scheduled', dueMs: Number(answer.reply) };
  }

  /**
   * Claims up to `limit` due members across the shards, hiding each for `visibilityMs`. Shards are visited
   * from a random start so concurrent ticks do not all drain shard 0 first.
   */
  async claimDue(limit: number, visibilityMs: number): Promise<ClaimResult> {
    const claims: Claim[] = [];
    let unreachable: Unknown | undefined;
    const start = Math.floor(Math.random() * SCHEDULE_SHARDS);
    for (let offset = 0; offset < SCHEDULE_SHARDS && claims.length < limit; offset += 1) {
      const key = this.#keys.scheduleShard((start + offset) % SCHEDULE_SHARDS);
      const answer = await attempt(() =>
        callScript(this.#client, 'captfScheduleClaim', [
          key,
          limit - claims.length,
          Math.round(visibilityMs),
        ]),
      );
      if (answer.kind === 'unknown') {
        unreachable = answer;
        continue;
      }
      const items = replyArray(answer.reply, 'captfScheduleClaim');
      const claimScore = replyNumber(items, 0, 'captfScheduleClaim');
      for (let index = 1; index < items.length; index += 1) {
        claims.push({ member: replyString(items, index, 'captfScheduleClaim'), claimScore });
      }
    }
    return unreachable === undefined
      ? { kind: 'claimed', claims }
      : { kind: 'claimed', claims, unknown: unreachable };
  }

  /**
   * Acknowledges a claim: removes the member, or, with `nextDelayMs`, schedules its next look (replacing the
   * claim's score even when later). If the member was re-added meanwhile, the earlier time wins.
   */
  async ack(claim: Claim, nextDelayMs?: number): Promise<ScheduleAck> {
    const next = nextDelayMs === undefined ? '' : Math.max(0, Math.round(nextDelayMs));
    const answer = await attempt(() =>
      callScript(this.#client, 'captfScheduleAck', [
        this.#keys.scheduleShardOf(claim.member),
        claim.member,
        claim.claimScore,
        next,
      ]),
    );
    if (answer.kind === 'unknown') return answer;
    return Number(answer.reply) === 1 ? { kind: 'acknowledged' } : { kind: 'superseded' };
  }

  /** The member's due time, if scheduled. */
  async scheduledAt(member: string): Promise<ScheduledAt> {
    const answer = await attempt(() => this.#client.zscore(this.#keys.scheduleShardOf(member), member));
    if (answer.kind === 'unknown') return answer;
    return answer.reply === null ? { kind: 'absent' } : { kind: 'scheduled', dueMs: Number(answer.reply) };
  }

  /** Drops the member (its object is gone). */
  async remove(member: string): Promise<ScheduleRemove> {
    const answer = await attempt(() => this.#client.zrem(this.#keys.scheduleShardOf(member), member));
    return answer.kind === 'unknown' ? answer : { kind: 'removed' };
  }
}
