import type { RedisClient } from './client.ts';
import type { KeyLayout } from './keys.ts';
import { attempt, type Unknown } from './unknown.ts';

/**
 * Event dedupe (DESIGN.md section 8): a replay storm costs one SET NX EX per event. The key is the object's
 * `uid@resourceVersion`: a resource-mode event carries it; for a reference-mode event, which carries
 * neither (section 13), `/events` reads the object's version first (one GET; src/http/routes/events.ts).
 */
export type SeenCheck = { kind: 'first' } | { kind: 'seen' } | Unknown;

/** Marks `uid@resourceVersion` seen for `ttlSeconds`; `first` only for the first caller. */
export async function markEventSeen(
  client: RedisClient,
  keys: KeyLayout,
  event: { uid: string; resourceVersion: string },
  ttlSeconds: number,
): Promise<SeenCheck> {
  const key = keys.seen(event.uid, event.resourceVersion);
  const answer = await attempt(() => client.set(key, '1', 'EX', ttlSeconds, 'NX'));
  if (answer.kind === 'unknown') return answer;
  return answer.reply === 'OK' ? { kind: 'first' } : { kind: 'seen' };
}
