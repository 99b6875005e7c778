/**
 * The kubelet's two cuts of a termination message (pkg/kubelet/container/runtime.go constants). Pure.
 *
 * 1. Reading: `tail.ReadAtMost(path, MaxContainerTerminationMessageLength)` keeps the LAST 4096 bytes of
 *    the file (kuberuntime_container.go getTerminationMessage).
 * 2. Writing status: `normalizeStatus` keeps the FIRST `12 KiB / (containers + init containers)` bytes of
 *    what survived (status_manager.go), so a pod with one init container and `source` keeps 4096 of 4096,
 *    one with four containers 3072 (C10).
 */

/** Most bytes the kubelet reads from one container's termination message file. */
export const maxContainerTerminationMessageBytes = 4 * 1024;
/** Most bytes of termination messages one pod may carry across all its containers. */
export const maxPodTerminationMessageBytes = 12 * 1024;
/** `FallbackToLogsOnError`: the kubelet reads at most 80 lines and 2048 bytes of the log tail. */
export const fallbackLogLines = 80;
export const fallbackLogBytes = 2 * 1024;

/** Cut 1: the last 4096 bytes of the file's content. */
export function readCut(content: Buffer): Buffer {
  return content.length > maxContainerTerminationMessageBytes
    ? content.subarray(content.length - maxContainerTerminationMessageBytes)
    : content;
}

/** Cut 2: the first `12 KiB / containerCount` bytes, for a pod with `containerCount` containers in all. */
export function statusCut(message: Buffer, containerCount: number): Buffer {
  const budget = Math.floor(maxPodTerminationMessageBytes / Math.max(1, containerCount));
  return message.length > budget ? message.subarray(0, budget) : message;
}

/**
 * The message the kubelet reports for an exited container: both cuts applied to the file's content, or,
 * with `FallbackToLogsOnError`, a non-zero exit and an empty file, the log tail (80 lines, 2048 bytes).
 * Go strings hold bytes; JSON carries UTF-8, so a multi-byte character cut in half decodes as U+FFFD.
 */
export function terminationMessage(input: {
  fileContent: Buffer | undefined;
  policy: string | undefined;
  exitCode: number;
  logTail: () => Buffer;
  containerCount: number;
}): string {
  let message = readCut(input.fileContent ?? Buffer.alloc(0));
  if (message.length === 0 && input.policy === 'FallbackToLogsOnError' && input.exitCode !== 0) {
    const lines = input.logTail().toString('utf8').replace(/\n$/, '').split('\n');
    const tail = Buffer.from(lines.slice(-fallbackLogLines).join('\n'));
    message = tail.length > fallbackLogBytes ? tail.subarray(tail.length - fallbackLogBytes) : tail;
  }
  return statusCut(message, input.containerCount).toString('utf8');
}
