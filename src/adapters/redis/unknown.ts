/**
 * The outcome of a Redis call whose answer did not arrive or was an error (timeout, connection down,
 * server error). DESIGN.md section 13: such an outcome is "unknown", never "held" and never "free"; the
 * caller answers "unavailable" and retries later, and the API-server guard (section 5 step 7) stays the
 * safety net.
 */
export interface Unknown {
  kind: 'unknown';
  cause: Error;
}

/** Wraps whatever a call threw as an Unknown outcome. */
export function unknownOf(error: unknown): Unknown {
  return { kind: 'unknown', cause: error instanceof Error ? error : new Error(String(error)) };
}

/**
 * Runs one Redis call and turns any failure into Unknown. Only Redis I/O belongs inside `call`: a reply
 * that does not parse is a bug and must be thrown by the caller outside it.
 */
export async function attempt<T>(call: () => Promise<T>): Promise<{ kind: 'answered'; reply: T } | Unknown> {
  try {
    return { kind: 'answered', reply: await call() };
  } catch (error) {
    return unknownOf(error);
  }
}
