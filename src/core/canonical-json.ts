/**
 * Canonical JSON: object keys sorted (by UTF-16 code units) at every level and undefined members left out,
 * so equal values give equal text whatever their key order. The inputs hash (src/core/inputs-hash.ts) and
 * the plan digest (src/runner/plan-digest.ts, DESIGN.md section 11) both hash this text, so a change here
 * changes every stored hash and digest.
 */

/** The canonical text of a JSON-shaped value; `undefined` (at the top or in an array) is written `null`. */
export function canonicalJson(value: unknown): string {
  if (value === undefined) return 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, member]) => member !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([key, member]) => `${JSON.stringify(key)}:${canonicalJson(member)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
