import type { RedisClient } from './client.ts';
import { replyArray, replyString } from './reply.ts';
import { callScript } from './scripts.ts';
import { attempt, type Unknown } from './unknown.ts';

/**
 * A single-holder lease on one key whose value is the holder's token (SET NX PX; renew and release compare
 * the token in Lua, SERVERLESS-FACTS.md 5.1). Used for the per-object step lock (DESIGN.md section 5
 * step 1) and for named leases (the sweep, the relay leader).
 */

/** `acquired` also when the caller already held it (its TTL is then refreshed). */
export type TokenTake = { kind: 'acquired'; token: string } | { kind: 'held'; holder: string } | Unknown;
/** `lost`: the lease expired or belongs to someone else now; nothing was changed. */
export type TokenRenew = { kind: 'renewed' } | { kind: 'lost' } | Unknown;
/** `not-held`: the lease was not the caller's (expired or taken over); nothing was deleted. */
export type TokenRelease = { kind: 'released' } | { kind: 'not-held' } | Unknown;

/** Takes the lease `key` for `token` for `ttlMs`. */
export async function takeTokenLease(
  client: RedisClient,
  key: string,
  token: string,
  ttlMs: number,
): Promise<TokenTake> {
  const answer = await attempt(() => callScript(client, 'captfTokenTake', [key, token, ttlMs]));
  if (answer.kind === 'unknown') return answer;
  const items = replyArray(answer.reply, 'captfTokenTake');
  return replyString(items, 0, 'captfTokenTake') === 'acquired'
    ? { kind: 'acquired', token }
    : { kind: 'held', holder: replyString(items, 1, 'captfTokenTake') };
}

/** Pushes the lease's expiry to `ttlMs` from now, only if `token` still holds it. */
export async function renewTokenLease(
  client: RedisClient,
  key: string,
  token: string,
  ttlMs: number,
): Promise<TokenRenew> {
  const answer = await attempt(() => callScript(client, 'captfTokenRenew', [key, token, ttlMs]));
  if (answer.kind === 'unknown') return answer;
  return Number(answer.reply) === 1 ? { kind: 'renewed' } : { kind: 'lost' };
}

/** Deletes the lease only if `token` holds it. */
export async function releaseTokenLease(
  client: RedisClient,
  key: string,
  token: string,
): Promise<TokenRelease> {
  const answer = await attempt(() => callScript(client, 'captfTokenRelease', [key, token]));
  if (answer.kind === 'unknown') return answer;
  return Number(answer.reply) === 1 ? { kind: 'released' } : { kind: 'not-held' };
}
