import { createRedactor, type Redactor } from '../core/redaction.ts';
import { RUN_LOG_MAX_BYTES, type Tail } from '../core/run-log.ts';
import { planChangesLogLines } from '../schemas/plan-changes-log.ts';

/**
 * The runner's own output (its pod log). Every line goes through the run's redactor (C15), and Terraform's
 * `-json` lines are shown as their human message, never as raw JSON (the snippet quotes raw input).
 */
export class RunnerLog {
  #redactor: Redactor = createRedactor([]);
  #write: (stream: 'stdout' | 'stderr', text: string) => void;
  /** What was written, whole lines, for the run log Secret: at least its last RUN_LOG_MAX_BYTES. */
  #kept: { text: string; bytes: number }[] = [];
  #keptBytes = 0;
  #droppedBytes = 0;

  /** `write` receives whole lines (with their newline); main passes the process streams. */
  constructor(write: (stream: 'stdout' | 'stderr', text: string) => void) {
    this.#write = (stream, text) => {
      write(stream, text);
      this.#keep(text);
    };
  }

  /** Keeps `text`; drops whole writes from the front while what stays still holds the bound. */
  #keep(text: string): void {
    const bytes = Buffer.byteLength(text);
    this.#kept.push({ text, bytes });
    this.#keptBytes += bytes;
    // Twice the bound before trimming: a trim per write would copy the buffer on every line.
    if (this.#keptBytes <= 2 * RUN_LOG_MAX_BYTES) return;
    let first = this.#kept[0];
    while (first !== undefined && this.#keptBytes - first.bytes >= RUN_LOG_MAX_BYTES) {
      this.#kept.shift();
      this.#keptBytes -= first.bytes;
      this.#droppedBytes += first.bytes;
      first = this.#kept[0];
    }
  }

  /**
   * Everything written so far as one text (stdout and stderr as they came), redacted again with the
   * newest redactor (sensitive outputs join it late), and how many leading bytes the buffer dropped.
   */
  written(): Tail {
    return {
      text: this.#redactor.redact(this.#kept.map((k) => k.text).join('')),
      droppedBytes: this.#droppedBytes,
    };
  }

  /** Sets the redactor once the run config (and so the secrets) is known. */
  useRedactor(redactor: Redactor): void {
    this.#redactor = redactor;
  }

  /** A line about the run's progress. */
  info(text: string): void {
    this.#write('stdout', `captf-runner: ${this.#redactor.redact(text)}\n`);
  }

  /** A line about something that went wrong. */
  error(text: string): void {
    this.#write('stderr', `captf-runner: ${this.#redactor.redact(text)}\n`);
  }

  /**
   * The readable plan's lines (src/schemas/plan-changes-log.ts): redacted as one text before it is cut
   * into lines, so a cut never splits a secret out of reach of the redactor.
   */
  planChanges(json: string): void {
    this.#write('stdout', planChangesLogLines(this.#redactor.redact(json)).join(''));
  }

  /** A line of Terraform's own output, prefixed with the step it came from. */
  relay(step: string, stream: 'stdout' | 'stderr', text: string): void {
    // A UI message may span lines (the interrupt notice does): each line keeps its step prefix.
    const lines = this.#redactor.redact(text).trim().split('\n');
    this.#write(stream, lines.map((line) => `[${step}] ${line}\n`).join(''));
  }
}
