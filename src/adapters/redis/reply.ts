/**
 * Reads Lua script replies. A reply of the wrong shape means the script and its caller disagree: a bug,
 * thrown as an Error naming the script.
 */

/** The reply as an array of strings and integers. */
export function replyArray(reply: unknown, script: string): (string | number)[] {
  if (!Array.isArray(reply)) throw new Error(`read ${script} reply: not an array: ${String(reply)}`);
  return reply.map((item: unknown) => {
    if (typeof item === 'string' || typeof item === 'number') return item;
    if (Buffer.isBuffer(item)) return item.toString('utf8');
    throw new Error(`read ${script} reply: unexpected item ${String(item)}`);
  });
}

/** Item `index` of a reply array, as a string. */
export function replyString(items: (string | number)[], index: number, script: string): string {
  const item = items[index];
  if (item === undefined) throw new Error(`read ${script} reply: item ${index} missing`);
  return String(item);
}

/** Item `index` of a reply array, as a finite number. */
export function replyNumber(items: (string | number)[], index: number, script: string): number {
  const value = Number(replyString(items, index, script));
  if (!Number.isFinite(value)) throw new Error(`read ${script} reply: item ${index} is not a number`);
  return value;
}
