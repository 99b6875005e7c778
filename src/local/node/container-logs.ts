import type { V1ContainerStatus, V1PodStatus } from '@kubernetes/client-node';

/**
 * The kubelet's `GET /containerLogs/{namespace}/{pod}/{container}` rules, as pure functions: the query
 * (pkg/kubelet/server/server.go getContainerLogs, v1.PodLogOptions and its validation), which container
 * instance a request may read (pkg/kubelet/kubelet_pods.go validateContainerLogStatus), and the
 * `tailLines` / `limitBytes` cuts. The local node writes a container's stdout and stderr, interleaved and
 * without per-line times, straight into one file, so `timestamps`, `sinceSeconds` and `sinceTime` are
 * accepted and validated but do not change the output.
 */

/** The `PodLogOptions` the local node acts on. */
export interface LogOptions {
  follow: boolean;
  previous: boolean;
  /** Only the last this many lines (absent: all). */
  tailLines?: number;
  /** Stop after this many bytes (absent: no limit). */
  limitBytes?: number;
}

/** Query parse outcome, with the kubelet's status code and body for a refused one. */
export type LogQuery =
  | { kind: 'options'; options: LogOptions }
  | { kind: 'refused'; status: 400 | 422; message: string };

// strconv.ParseBool, which the query parameter codec uses for bool fields.
const trueWords = new Set(['1', 't', 'T', 'true', 'TRUE', 'True']);
const falseWords = new Set(['0', 'f', 'F', 'false', 'FALSE', 'False']);

/**
 * Parses a `/containerLogs` query like the kubelet: the legacy `tail` (`all` = everything) stands for
 * `tailLines`; a value that does not decode is a 400 `Unable to decode query.`, a negative `tailLines`, a
 * `limitBytes` or `sinceSeconds` below 1, or both `sinceSeconds` and `sinceTime`, a 422 `Invalid request.`.
 */
export function parseLogQuery(query: URLSearchParams): LogQuery {
  const undecodable: LogQuery = {
    kind: 'refused',
    status: 400,
    message: '{"message": "Unable to decode query."}',
  };
  const invalid: LogQuery = { kind: 'refused', status: 422, message: '{"message": "Invalid request."}' };
  const bool = (name: string): boolean | undefined => {
    const value = query.get(name);
    if (value === null || value === '') return false;
    if (trueWords.has(value)) return true;
    if (falseWords.has(value)) return false;
    return undefined;
  };
  // undefined: absent; null: present but not an integer.
  const integer = (value: string | null): number | undefined | null => {
    if (value === null || value === '') return undefined;
    return /^[+-]?\d+$/.test(value) ? Number(value) : null;
  };
  const tail = query.get('tail');
  const tailLines = tail === 'all' ? undefined : integer(tail || query.get('tailLines'));
  const limitBytes = integer(query.get('limitBytes'));
  const sinceSeconds = integer(query.get('sinceSeconds'));
  const follow = bool('follow');
  const previous = bool('previous');
  const timestamps = bool('timestamps');
  if (
    follow === undefined ||
    previous === undefined ||
    timestamps === undefined ||
    tailLines === null ||
    limitBytes === null ||
    sinceSeconds === null
  )
    return undecodable;
  const sinceTime = query.get('sinceTime');
  if (sinceTime !== null && sinceTime !== '' && Number.isNaN(Date.parse(sinceTime))) return undecodable;
  if (tailLines !== undefined && tailLines < 0) return invalid;
  if (limitBytes !== undefined && limitBytes < 1) return invalid;
  if (sinceSeconds !== undefined && sinceSeconds < 1) return invalid;
  if (sinceSeconds !== undefined && sinceTime !== null && sinceTime !== '') return invalid;
  return {
    kind: 'options',
    options: {
      follow,
      previous,
      ...(tailLines !== undefined ? { tailLines } : {}),
      ...(limitBytes !== undefined ? { limitBytes } : {}),
    },
  };
}

/** Which log a request reads, or the kubelet's 400 message when there is none to read. */
export type LogTarget = { kind: 'current'; running: boolean } | { kind: 'unavailable'; message: string };

/**
 * The kubelet's choice of container instance for `container` of pod `podName` from the status it reports:
 * a running or terminated container's log is read, a waiting one has none yet. `previous` asks for the
 * instance before a restart; the local node never restarts a container (Job pods, `restartPolicy:
 * Never`), so it always answers like a kubelet whose container has no last terminated state.
 */
export function logTarget(
  podName: string,
  status: V1PodStatus | undefined,
  container: string,
  previous: boolean,
): LogTarget {
  const byName = (list: V1ContainerStatus[] | undefined) => list?.find((entry) => entry.name === container);
  const found = byName(status?.containerStatuses) ?? byName(status?.initContainerStatuses);
  const where = `container "${container}" in pod "${podName}"`;
  if (!found) return { kind: 'unavailable', message: `${where} is not available` };
  const { waiting, running, terminated } = found.state ?? {};
  if (previous)
    return {
      kind: 'unavailable',
      message: `previous terminated container "${container}" in pod "${podName}" not found`,
    };
  if (running) return { kind: 'current', running: true };
  if (terminated) {
    if (terminated.containerID) return { kind: 'current', running: false };
    return { kind: 'unavailable', message: `${where} is terminated` };
  }
  if (waiting) {
    if (waiting.reason === 'ErrImagePull')
      return { kind: 'unavailable', message: `${where} is waiting to start: image can't be pulled` };
    if (waiting.reason === 'ImagePullBackOff')
      return {
        kind: 'unavailable',
        message: `${where} is waiting to start: trying and failing to pull image`,
      };
    return { kind: 'unavailable', message: `${where} is waiting to start: ${waiting.reason ?? ''}` };
  }
  return { kind: 'unavailable', message: `${where} is waiting to start - no logs yet` };
}

/**
 * Byte offset in `log` where its last `lines` lines begin; a final line without a newline counts as a
 * line (the kubelet's tail reads the same way). `lines` 0 gives the end: nothing to show.
 */
export function tailOffset(log: Uint8Array, lines: number): number {
  if (lines <= 0) return log.length;
  const newline = 0x0a;
  // A trailing newline ends the last line; it does not start another.
  let end = log.length > 0 && log[log.length - 1] === newline ? log.length - 1 : log.length;
  for (let seen = 0; end > 0; ) {
    const previousNewline = log.lastIndexOf(newline, end - 1);
    seen++;
    if (seen === lines || previousNewline < 0) return previousNewline + 1;
    end = previousNewline;
  }
  return 0;
}
