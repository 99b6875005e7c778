import type { RedisClient } from './client.ts';

/**
 * The Lua scripts, registered with ioredis `defineCommand` (EVALSHA with a transparent EVAL fallback).
 * Each script touches the keys of one hash slot only (see keys.ts) and reads the clock with the server's
 * `TIME` wherever expiry is compared, so instances with skewed clocks agree (SERVERLESS-FACTS.md 5.3).
 * Redis ≥ 5 replicates scripts by effects, so calling TIME before a write is allowed.
 */

/** `now` in milliseconds from the server clock. */
const NOW_MS = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

/**
 * How long a lease group's fencing counter outlives its last grant, ms (a week): long past any lease of the
 * group, and short enough that the counters of deleted objects and clusters do not pile up in Redis.
 */
export const FENCE_TTL_MS = 7 * 24 * 3600 * 1000;

/** Splits a lease value `<fence> <holder>`. */
const SPLIT_LEASE = `local function split(value)
  local sep = string.find(value, ' ', 1, true)
  return string.sub(value, 1, sep - 1), string.sub(value, sep + 1)
end`;

/**
 * Whether resourceVersion `a` is newer than `b`: a longer or greater decimal (the etcd revision, compared
 * as src/core/event-relevance.ts `compareResourceVersions` does, without numbers past 2^53).
 */
const NEWER_VERSION = `local function newer(a, b)
  return #a > #b or (#a == #b and a > b)
end`;

const SCRIPTS = {
  /**
   * Newest version of an object handled by /events. KEYS[1]; ARGV uid, resourceVersion, digest ('' when
   * unknown), ttlSeconds. Kept only when newer: another uid, a longer or greater decimal version, or the
   * same version with the content the stored one lacked. Returns 1 when stored, 0 when not.
   */
  captfNewestSeen: {
    numberOfKeys: 1,
    lua: `${NEWER_VERSION}
local current = redis.call('GET', KEYS[1])
if current then
  local uid, rv, digest = string.match(current, '^(%S+) (%S+) ?(%S*)$')
  if uid == ARGV[1] then
    local filled = ARGV[2] == rv and digest == '' and ARGV[3] ~= ''
    if not newer(ARGV[2], rv) and not filled then return 0 end
  end
end
redis.call('SET', KEYS[1], ARGV[1] .. ' ' .. ARGV[2] .. ' ' .. ARGV[3], 'EX', ARGV[4])
return 1`,
  },
  /**
   * One cached fact about a cluster (src/adapters/redis/cluster-facts.ts). KEYS[1]; ARGV uid ('-' for an
   * object found absent), resourceVersion, payload ('' while only the version is known), ttlSeconds. The
   * newest-seen rule: kept only when newer than the stored version of the same uid, or filling the payload
   * of the same version; another uid replaces it. An absence fills only an empty key: a read that found
   * nothing carries no version, so it never replaces an object an event or a later read found.
   * Returns 1 when stored, 0 when not.
   */
  captfClusterFact: {
    numberOfKeys: 1,
    lua: `${NEWER_VERSION}
local current = redis.call('GET', KEYS[1])
if current then
  if ARGV[1] == '-' then return 0 end
  local uid, rv, payload = string.match(current, '^(%S+) (%S+) ?(.*)$')
  if uid == ARGV[1] then
    local filled = ARGV[2] == rv and payload == '' and ARGV[3] ~= ''
    if not newer(ARGV[2], rv) and not filled then return 0 end
  end
end
redis.call('SET', KEYS[1], ARGV[1] .. ' ' .. ARGV[2] .. ' ' .. ARGV[3], 'EX', ARGV[4])
return 1`,
  },
  /** Dependents: KEYS[1] set. Returns its members and deletes it, atomically. */
  captfDependentsTake: {
    numberOfKeys: 1,
    lua: `local members = redis.call('SMEMBERS', KEYS[1])
redis.call('DEL', KEYS[1])
return members`,
  },
  /**
   * Single-holder token lease. KEYS[1] lease; ARGV token, ttlMs.
   * Returns {'acquired'} (new, or already ours: TTL refreshed) or {'held', holderToken}.
   */
  captfTokenTake: {
    numberOfKeys: 1,
    lua: `if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return {'acquired'} end
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return {'acquired'}
end
return {'held', holder or ''}`,
  },
  /** KEYS[1] lease; ARGV token, ttlMs. 1 when renewed, 0 when the lease is not the caller's. */
  captfTokenRenew: {
    numberOfKeys: 1,
    lua: `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0`,
  },
  /** KEYS[1] lease; ARGV token. 1 when deleted, 0 when the lease is not the caller's (nothing deleted). */
  captfTokenRelease: {
    numberOfKeys: 1,
    lua: `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`,
  },
  /**
   * Run lease (DESIGN.md section 5 step 6) in one atomic step.
   * KEYS run, cluster, members, fence; ARGV holder, ttlMs, role, objectId.
   * Roles: 'solo' (run lease only), 'cluster-writer' (run + cluster lease, reports live member leases),
   * 'member-writer' (refused while the cluster lease is live; registers in members),
   * 'member-reader' (refused while the cluster lease is live).
   * Fences come from the group's counter (INCR), seeded from the server clock when the counter is new, and
   * kept {@link FENCE_TTL_MS} after the group's last grant.
   * Returns {'acquired', fence, liveMembers, retaken} | {'held', holder, fence} | {'cluster-busy', holder, fence}.
   */
  captfRunTake: {
    numberOfKeys: 4,
    lua: `${NOW_MS}
${SPLIT_LEASE}
local holder, ttl, role, object = ARGV[1], tonumber(ARGV[2]), ARGV[3], ARGV[4]
local value
local retaken = 0
local current = redis.call('GET', KEYS[1])
if current then
  local fence, owner = split(current)
  if owner ~= holder then return {'held', owner, fence} end
  value = current
  retaken = 1
end
local cluster = redis.call('GET', KEYS[2])
if role == 'cluster-writer' then
  if cluster and cluster ~= value then
    local fence, owner = split(cluster)
    if owner ~= holder then return {'held', owner, fence} end
  end
elseif (role == 'member-writer' or role == 'member-reader') and cluster and retaken == 0 then
  local fence, owner = split(cluster)
  return {'cluster-busy', owner, fence}
end
if not value then
  local fence = redis.call('INCR', KEYS[4])
  -- A fresh counter (first grant, or Redis flushed/restarted) starts from the server clock, so fences
  -- stay monotonic across a flush as long as the clock moves faster than one grant per ms per group.
  if fence == 1 then
    fence = now
    redis.call('SET', KEYS[4], now)
  end
  -- The counter goes a week after the group's last grant, so a deleted object's or cluster's is not kept
  -- for ever; a later grant reseeds it from the clock, far above any fence it handed out.
  redis.call('PEXPIRE', KEYS[4], ${FENCE_TTL_MS})
  value = fence .. ' ' .. holder
end
redis.call('SET', KEYS[1], value, 'PX', ttl)
local live = 0
if role == 'cluster-writer' then
  redis.call('SET', KEYS[2], value, 'PX', ttl)
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
  live = redis.call('ZCOUNT', KEYS[3], '(' .. now, '+inf')
elseif role == 'member-writer' then
  redis.call('ZADD', KEYS[3], now + ttl, object)
end
local fence = split(value)
return {'acquired', fence, live, retaken}`,
  },
  /**
   * Read-only view of a Cluster API cluster's leases. KEYS cluster, members.
   * Returns {clusterLeaseValue or '', liveMembers}.
   */
  captfClusterRead: {
    numberOfKeys: 2,
    lua: `${NOW_MS}
return {redis.call('GET', KEYS[1]) or '', redis.call('ZCOUNT', KEYS[2], '(' .. now, '+inf')}`,
  },
  /**
   * Read-only view of a member's lease group in one round trip. KEYS run, cluster.
   * Returns {runLeaseValue or '', clusterLeaseValue or ''}.
   */
  captfMemberRead: {
    numberOfKeys: 2,
    lua: `return {redis.call('GET', KEYS[1]) or '', redis.call('GET', KEYS[2]) or ''}`,
  },
  /**
   * KEYS run, cluster, members; ARGV value ('<fence> <holder>'), ttlMs, objectId.
   * 1 when renewed (with the cluster lease and member entry the same grant holds), 0 when not the caller's.
   */
  captfRunRenew: {
    numberOfKeys: 3,
    lua: `${NOW_MS}
local value, ttl, object = ARGV[1], tonumber(ARGV[2]), ARGV[3]
if redis.call('GET', KEYS[1]) ~= value then return 0 end
redis.call('PEXPIRE', KEYS[1], ttl)
if redis.call('GET', KEYS[2]) == value then redis.call('PEXPIRE', KEYS[2], ttl) end
if redis.call('ZSCORE', KEYS[3], object) then redis.call('ZADD', KEYS[3], 'XX', now + ttl, object) end
return 1`,
  },
  /**
   * KEYS run, cluster, members; ARGV value, objectId. Deletes only what the caller's grant holds:
   * 1 when the run lease was the caller's, 0 otherwise (a foreign lease is left untouched, C17).
   */
  captfRunRelease: {
    numberOfKeys: 3,
    lua: `local value, object = ARGV[1], ARGV[2]
local current = redis.call('GET', KEYS[1])
if current and current ~= value then return 0 end
if redis.call('GET', KEYS[2]) == value then redis.call('DEL', KEYS[2]) end
redis.call('ZREM', KEYS[3], object)
if current then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0`,
  },
  /**
   * Job slots. KEYS: one or two slot sets (installation, then the cluster's); ARGV member, ttlMs, then one
   * limit per key. Expired entries are dropped first (a crashed holder cannot leak a slot). A member that
   * already holds its slot keeps it; otherwise it is added only when every set is below its limit.
   * Returns {'acquired'} | {'full', keyIndex, active}.
   */
  captfSlotTake: {
    lua: `${NOW_MS}
local member, ttl = ARGV[1], tonumber(ARGV[2])
for i = 1, #KEYS do redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now) end
if not redis.call('ZSCORE', KEYS[1], member) then
  for i = 1, #KEYS do
    local active = redis.call('ZCARD', KEYS[i])
    if active >= tonumber(ARGV[2 + i]) then return {'full', i, active} end
  end
end
for i = 1, #KEYS do redis.call('ZADD', KEYS[i], now + ttl, member) end
return {'acquired'}`,
  },
  /** KEYS slot sets; ARGV member, ttlMs. Number of sets where the member's expiry was pushed out. */
  captfSlotRenew: {
    lua: `${NOW_MS}
local renewed = 0
for i = 1, #KEYS do renewed = renewed + redis.call('ZADD', KEYS[i], 'XX', 'CH', now + tonumber(ARGV[2]), ARGV[1]) end
return renewed`,
  },
  /** KEYS slot sets. Live entries per set, after dropping expired ones. */
  captfSlotCount: {
    lua: `${NOW_MS}
local counts = {}
for i = 1, #KEYS do
  redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now)
  counts[i] = redis.call('ZCARD', KEYS[i])
end
return counts`,
  },
  /**
   * Requeue: KEYS[1] shard; ARGV member, delayMs. Keeps the earliest due time (ZADD LT, like workqueue
   * AddAfter). Returns the member's due time after the call, in ms, as a string.
   */
  captfScheduleAdd: {
    numberOfKeys: 1,
    lua: `${NOW_MS}
redis.call('ZADD', KEYS[1], 'LT', now + tonumber(ARGV[2]), ARGV[1])
return redis.call('ZSCORE', KEYS[1], ARGV[1])`,
  },
  /**
   * Ensure: KEYS[1] shard; ARGV member, delayMs. Schedules the member only when it has no requeue yet
   * (ZADD NX): the sweep's "every object has a requeue" without bringing anyone's forward.
   */
  captfScheduleEnsure: {
    numberOfKeys: 1,
    lua: `${NOW_MS}
redis.call('ZADD', KEYS[1], 'NX', now + tonumber(ARGV[2]), ARGV[1])
return redis.call('ZSCORE', KEYS[1], ARGV[1])`,
  },
  /**
   * Claim: KEYS[1] shard; ARGV limit, visibilityMs. Due members get the score now + visibility (so an
   * unacknowledged claim reappears); returns {claimScore, member…}.
   */
  captfScheduleClaim: {
    numberOfKeys: 1,
    lua: `${NOW_MS}
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
local claim = now + tonumber(ARGV[2])
for _, member in ipairs(due) do redis.call('ZADD', KEYS[1], 'XX', claim, member) end
local result = {tostring(claim)}
for _, member in ipairs(due) do table.insert(result, member) end
return result`,
  },
  /**
   * Acknowledge: KEYS[1] shard; ARGV member, claimScore, nextDelayMs ('' = no next look). When the member
   * still carries our claim, it is removed or moved to its next due time; when someone re-added it earlier
   * meanwhile, that earlier time wins (ZADD LT). 1 when our claim was still there, else 0.
   */
  captfScheduleAck: {
    numberOfKeys: 1,
    lua: `${NOW_MS}
local member, claim, delay = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local score = redis.call('ZSCORE', KEYS[1], member)
if score and tonumber(score) == claim then
  if delay == '' then redis.call('ZREM', KEYS[1], member)
  else redis.call('ZADD', KEYS[1], now + tonumber(delay), member) end
  return 1
end
if delay ~= '' then redis.call('ZADD', KEYS[1], 'LT', now + tonumber(delay), member) end
return 0`,
  },
} as const;

export type ScriptName = keyof typeof SCRIPTS;

/** Registers every script on a client (once per client). */
export function defineScripts(client: RedisClient): void {
  for (const [name, definition] of Object.entries(SCRIPTS)) client.defineCommand(name, definition);
}

/**
 * Calls a script defined by `defineScripts`. ioredis adds defined commands as untyped methods, so the
 * method is looked up by name here, once, instead of widening the client type; the reply is `unknown`
 * and each caller parses it. Scripts without a fixed key count take the number of keys first.
 */
export function callScript(
  client: RedisClient,
  name: ScriptName,
  args: (string | number)[],
): Promise<unknown> {
  const method: unknown = Reflect.get(client, name);
  if (typeof method !== 'function') throw new Error(`call script ${name}: not defined on this client`);
  return method.apply(client, args);
}
