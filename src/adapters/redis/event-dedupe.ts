import type { RedisClient } from './client.ts';
import type { KeyLayout } from './keys.ts';
import { attempt, type Unknown } from './unknown.ts';

/**
 * Event dedupe (DESIGN.md section 8): a replay storm costs one SET NX EX per event. The key is the object's
 * `uid@resourceVersion`: a resource-mode event carries it; for a reference-mode event, which carries
 * neither (section 13), `/events` reads the object's version first (one GET; src/http/routes/events.ts).
 */
export type SeenCheck = { kind: 'first' } | { kind: 'seen' } | Unknown;

/** How long a version stays marked seen (and its newest-handled record kept): longer than any replay storm. */
export const EVENT_SEEN_TTL_SECONDS = 3600;

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

/**
 * How long a version a step wrote stays marked: its watch event comes back within seconds, even behind a
 * busy relay; a replay after that is older than the newest version handled anyway (`Stale`).
 */
export const OWN_WRITE_TTL_SECONDS = 300;

/**
 * Marks `uid@resourceVersion` as written by a step (DESIGN.md section 8). Unlike the seen marker it says
 * nothing about what was handled: the sweep and a retried event still treat the version as news, so a step
 * that dies after the write is taken up again as before; only the Resource-mode event carrying exactly this
 * version is known to be the echo of the write and starts nothing.
 */
export async function markOwnWrite(
  client: RedisClient,
  keys: KeyLayout,
  event: { uid: string; resourceVersion: string },
  ttlSeconds: number = OWN_WRITE_TTL_SECONDS,
): Promise<{ kind: 'marked' } | Unknown> {
  const answer = await attempt(() =>
    client.set(keys.ownWrite(event.uid, event.resourceVersion), '1', 'EX', ttlSeconds),
  );
  return answer.kind === 'unknown' ? answer : { kind: 'marked' };
}

/** The two marks a version of one of our objects may carry: handled (`seen`), or written by a step (`own`). */
export type VersionMark = 'seen' | 'own';

/** Whether `uid@resourceVersion` carries `mark` (one EXISTS). */
export async function versionMarked(
  client: RedisClient,
  keys: KeyLayout,
  event: { uid: string; resourceVersion: string },
  mark: VersionMark,
): Promise<{ kind: 'answered'; marked: boolean } | Unknown> {
  const key =
    mark === 'seen'
      ? keys.seen(event.uid, event.resourceVersion)
      : keys.ownWrite(event.uid, event.resourceVersion);
  const answer = await attempt(() => client.exists(key));
  return answer.kind === 'unknown' ? answer : { kind: 'answered', marked: answer.reply === 1 };
}
