import { isJsonObject, type JsonObject, type JsonValue } from './json.ts';

/**
 * Reading Terraform's machine-readable UI (`-json`): the line stream of `init`, `plan`, `apply`, `destroy`
 * and the single document of `validate -json`. Only the parts the runner needs: diagnostics, the change
 * summary and outputs. Unknown message types and non-JSON lines are ignored (the UI format promises
 * additive minor versions).
 */

/** One diagnostic, reduced to what a summary may quote: never the snippet (it quotes raw input, C15). */
export interface Diagnostic {
  severity: 'error' | 'warning';
  summary: string;
  detail: string;
  /** `file:line` of the diagnostic's range, when it has one. */
  where?: string;
}

/** Counts from a `change_summary` message. */
export interface ChangeCounts {
  add: number;
  change: number;
  remove: number;
}

/** One root module output from an `outputs` message; sensitive outputs carry no value. */
export interface UiOutput {
  sensitive: boolean;
  value?: JsonValue;
}

/** What one step's UI said. */
export interface UiReport {
  diagnostics: Diagnostic[];
  /** The last `change_summary`, when the step printed one. */
  changes?: ChangeCounts;
  /** The last `outputs` message that carried values (apply prints values, plan prints only actions). */
  outputs?: Record<string, UiOutput>;
}

function text(value: JsonValue | undefined): string {
  return typeof value === 'string' ? value : '';
}

function count(value: JsonValue | undefined): number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 ? value : 0;
}

function toDiagnostic(raw: JsonValue | undefined): Diagnostic | undefined {
  if (!isJsonObject(raw)) return undefined;
  const severity = raw.severity === 'error' || raw.severity === 'warning' ? raw.severity : undefined;
  if (severity === undefined) return undefined;
  const diagnostic: Diagnostic = { severity, summary: text(raw.summary), detail: text(raw.detail) };
  const range = raw.range;
  if (isJsonObject(range) && isJsonObject(range.start) && typeof range.filename === 'string') {
    diagnostic.where = `${range.filename}:${count(range.start.line)}`;
  }
  return diagnostic;
}

function toOutputs(raw: JsonValue | undefined): Record<string, UiOutput> | undefined {
  if (!isJsonObject(raw)) return undefined;
  const outputs: Record<string, UiOutput> = {};
  let withValue = false;
  for (const [name, entry] of Object.entries(raw)) {
    if (!isJsonObject(entry)) continue;
    const output: UiOutput = { sensitive: entry.sensitive === true };
    if (!output.sensitive && 'value' in entry && entry.value !== undefined) {
      output.value = entry.value;
      withValue = true;
    }
    outputs[name] = output;
  }
  return withValue ? outputs : undefined;
}

function parseLine(line: string): JsonObject | undefined {
  if (!line.startsWith('{')) return undefined;
  try {
    const value: JsonValue = JSON.parse(line);
    return isJsonObject(value) ? value : undefined;
  } catch {
    return undefined;
  }
}

/** Reads the `-json` line stream of a long-running command (init, plan, apply, destroy). */
export function readUiStream(lines: readonly string[]): UiReport {
  const report: UiReport = { diagnostics: [] };
  for (const line of lines) {
    const message = parseLine(line.trim());
    if (message === undefined) continue;
    if (message.type === 'diagnostic') {
      const diagnostic = toDiagnostic(message.diagnostic);
      if (diagnostic) report.diagnostics.push(diagnostic);
    } else if (message.type === 'change_summary' && isJsonObject(message.changes)) {
      const c = message.changes;
      report.changes = { add: count(c.add), change: count(c.change), remove: count(c.remove) };
    } else if (message.type === 'outputs') {
      const outputs = toOutputs(message.outputs);
      if (outputs) report.outputs = outputs;
    }
  }
  return report;
}

/**
 * The JSON document a command printed (`validate -json`, `show -json`). OpenTofu prints CLI-configuration
 * warnings as text on stdout before it, so the document starts at the first line opening a JSON object
 * from which the rest parses. Undefined when there is none.
 */
export function jsonDocument(stdout: string): JsonValue | undefined {
  const lines = stdout.split('\n');
  for (let i = 0; i < lines.length; i++) {
    if (!lines[i]?.startsWith('{')) continue;
    try {
      return JSON.parse(lines.slice(i).join('\n'));
    } catch {
      // Not the document yet: a warning line may start with a brace too.
    }
  }
  return undefined;
}

/** Reads the single document of `validate -json`; anything unreadable yields no diagnostics. */
export function readValidateDocument(stdout: string): UiReport {
  const doc = jsonDocument(stdout);
  if (!isJsonObject(doc) || !Array.isArray(doc.diagnostics)) return { diagnostics: [] };
  return { diagnostics: doc.diagnostics.flatMap((d) => toDiagnostic(d) ?? []) };
}

/**
 * The human text of one `-json` message for the runner's log: `@message`, plus the detail and place of a
 * diagnostic (never its snippet); undefined for lines that are not UI messages. Not yet redacted.
 */
export function uiMessage(line: string): string | undefined {
  const message = parseLine(line.trim());
  if (message === undefined) return undefined;
  const human = text(message['@message']);
  const diagnostic = message.type === 'diagnostic' ? toDiagnostic(message.diagnostic) : undefined;
  if (diagnostic === undefined) return human === '' ? undefined : human;
  const where = diagnostic.where === undefined ? '' : ` (${diagnostic.where})`;
  return diagnostic.detail === '' ? `${human}${where}` : `${human}${where}: ${diagnostic.detail}`;
}
