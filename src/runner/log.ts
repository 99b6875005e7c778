import { createRedactor, type Redactor } from '../core/redaction.ts';
import { planChangesLogLines } from '../schemas/plan-changes-log.ts';

/**
 * The runner's own output (its pod log). Every line goes through the run's redactor (C15), and Terraform's
 * `-json` lines are shown as their human message, never as raw JSON (the snippet quotes raw input).
 */
export class RunnerLog {
  #redactor: Redactor = createRedactor([]);
  #write: (stream: 'stdout' | 'stderr', text: string) => void;

  /** `write` receives whole lines (with their newline); main passes the process streams. */
  constructor(write: (stream: 'stdout' | 'stderr', text: string) => void) {
    this.#write = write;
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
