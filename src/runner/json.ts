/** A JSON value as `JSON.parse` returns it; the runner reads Terraform's JSON documents through it. */
export type JsonValue =
  | string
  | number
  | boolean
  | null
  | JsonValue[]
  | { [key: string]: JsonValue | undefined };

/** A JSON object. */
export type JsonObject = { [key: string]: JsonValue | undefined };

/** Narrows a JSON value to an object (not an array, not null). */
export function isJsonObject(value: JsonValue | undefined): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
