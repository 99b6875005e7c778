import { RESULT_MAX_BYTES, type RunnerResult } from '../schemas/result.ts';

/**
 * Fitting the result document into the termination message (DESIGN.md section 10, C10): the kubelet keeps
 * at most RESULT_MAX_BYTES bytes, and a cut document does not parse, so the runner drops optional fields
 * itself, in this fixed order, until the document fits, and names what it dropped in `dropped`.
 * Least needed first: the listed output names (status keeps the Secret's name without them); machine
 * addresses, pool ID lists, a cluster's failure domains (up to 64) and its exports (up to 1 KiB) can be long
 * and the controller can wait for the next run, while the rest of the outputs (a cluster's endpoint, a
 * machine's provider ID) stays; the state report is a figure and a label the next run reports again; the
 * plan, the lock and the error are what bookkeeping classifies by, so they go last.
 */
export const DROP_ORDER = [
  'outputsSecret.outputs',
  'outputs.addresses',
  'outputs.providerIDList',
  'outputs.failureDomains',
  'outputs.exports',
  'state',
  'outputs',
  'imageDigest',
  'drift',
  'lock.who',
  'lock',
  'plan',
  'error',
] as const;
export type DropPath = (typeof DROP_ORDER)[number];

/** Removes one optional field from a copy of the document; a field already absent is not "dropped". */
const DROPPERS: Record<DropPath, (doc: RunnerResult) => boolean> = {
  'outputsSecret.outputs': (doc) =>
    doc.outputsSecret?.outputs !== undefined && delete doc.outputsSecret.outputs,
  'outputs.addresses': (doc) => doc.outputs?.addresses !== undefined && delete doc.outputs.addresses,
  'outputs.providerIDList': (doc) =>
    doc.outputs?.providerIDList !== undefined && delete doc.outputs.providerIDList,
  'outputs.failureDomains': (doc) =>
    doc.outputs?.failureDomains !== undefined && delete doc.outputs.failureDomains,
  'outputs.exports': (doc) => doc.outputs?.exports !== undefined && delete doc.outputs.exports,
  state: (doc) => doc.state !== undefined && delete doc.state,
  outputs: (doc) => doc.outputs !== undefined && delete doc.outputs,
  imageDigest: (doc) => doc.imageDigest !== undefined && delete doc.imageDigest,
  drift: (doc) => doc.drift !== undefined && delete doc.drift,
  'lock.who': (doc) => doc.lock?.who !== undefined && delete doc.lock.who,
  lock: (doc) => doc.lock !== undefined && delete doc.lock,
  plan: (doc) => doc.plan !== undefined && delete doc.plan,
  error: (doc) => doc.error !== undefined && delete doc.error,
};

/** Size of a document as written (compact JSON, UTF-8), in bytes. */
export function resultBytes(doc: RunnerResult): number {
  return new TextEncoder().encode(JSON.stringify(doc)).length;
}

/**
 * Returns the document, or a copy with optional fields dropped in DROP_ORDER, that serialises to at most
 * `maxBytes` bytes. The required fields (version, op, result, at most nine steps) always fit in 4096.
 */
export function fitResult(doc: RunnerResult, maxBytes: number = RESULT_MAX_BYTES): RunnerResult {
  if (resultBytes(doc) <= maxBytes) return doc;
  const fitted: RunnerResult = structuredClone(doc);
  const dropped: string[] = [...(doc.dropped ?? [])];
  for (const path of DROP_ORDER) {
    if (!DROPPERS[path](fitted)) continue;
    dropped.push(path);
    fitted.dropped = dropped;
    if (resultBytes(fitted) <= maxBytes) return fitted;
  }
  return fitted;
}
