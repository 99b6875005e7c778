import type { ChildProcess } from 'node:child_process';

/**
 * SIGTERM handling (DESIGN.md section 10): forward an interrupt (SIGINT) to the running Terraform process so
 * it finishes the in-flight provider call, writes state and releases the lock; kill it only when it has not
 * stopped within the stop timeout; start no further step. One instance per run.
 */
export class Interruption {
  /** The signal that asked the runner to stop; undefined while nobody did. */
  signal: NodeJS.Signals | undefined;
  /** Whether the stop timeout ran out and the process was killed. */
  killed = false;
  #child: ChildProcess | undefined;
  #stopTimeoutMs: number;
  #timer: NodeJS.Timeout | undefined;
  #log: (text: string) => void;

  /** `stopTimeoutMs`: how long Terraform may take to stop after the interrupt before it is killed. */
  constructor(stopTimeoutMs: number, log: (text: string) => void) {
    this.#stopTimeoutMs = stopTimeoutMs;
    this.#log = log;
  }

  /** Whether a stop was requested. */
  get requested(): boolean {
    return this.signal !== undefined;
  }

  /** Registers the running process; a stop requested before it started reaches it at once. */
  attach(child: ChildProcess): void {
    this.#child = child;
    if (this.requested) this.#interruptChild();
  }

  /** Forgets the process once it ended. */
  detach(): void {
    this.#child = undefined;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** Asks the run to stop; later requests are ignored (a second SIGINT would make Terraform abandon state). */
  request(signal: NodeJS.Signals): void {
    if (this.requested) return;
    this.signal = signal;
    this.#log(`received ${signal}: stopping`);
    if (this.#child !== undefined) this.#interruptChild();
  }

  #interruptChild(): void {
    const child = this.#child;
    if (child === undefined || this.#timer !== undefined) return;
    child.kill('SIGINT');
    this.#timer = setTimeout(() => {
      this.killed = true;
      this.#log(`runtime did not stop within ${this.#stopTimeoutMs / 1000}s after the interrupt: killing it`);
      child.kill('SIGKILL');
    }, this.#stopTimeoutMs);
  }
}
