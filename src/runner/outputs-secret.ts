import { type SecretJson, secretTexts } from '../core/redaction.ts';
import { MAX_LISTED_OUTPUTS } from '../schemas/result.ts';

/**
 * The outputs Secret's content (issue 24 item 3; src/core/outputs-secret.ts says who writes it and why):
 * pure decisions over the document `tofu output -json` prints. That document holds every root output with
 * its value, sensitive ones included, so it is never relayed to the log; only this Secret gets the values.
 */

/** One root output as `tofu output -json` prints it. */
export interface OutputValue {
  sensitive: boolean;
  value: unknown;
}

/** The outputs read from the document, or why it does not read (the message never quotes the document). */
export type OutputsDocument =
  | { ok: true; outputs: Record<string, OutputValue> }
  | { ok: false; message: string };

/**
 * Reads the stdout of `tofu output -json`: an object of `{sensitive, type, value}` by output name. The
 * document starts at the first line that opens an object: OpenTofu prints CLI configuration warnings (a
 * `TF_CLI_CONFIG_FILE` that does not exist) to stdout before it, as text.
 */
export function readOutputsDocument(stdout: string): OutputsDocument {
  const lines = stdout.split('\n');
  const start = lines.findIndex((line) => line.startsWith('{'));
  let parsed: unknown;
  try {
    if (start < 0) throw new Error('no object');
    parsed = JSON.parse(lines.slice(start).join('\n'));
  } catch {
    return { ok: false, message: 'output -json printed no JSON document' };
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
    return { ok: false, message: 'output -json printed no object of outputs' };
  const outputs: Record<string, OutputValue> = {};
  for (const [name, entry] of Object.entries(parsed as Record<string, unknown>)) {
    if (entry === null || typeof entry !== 'object' || !('value' in entry))
      return { ok: false, message: `output -json: output ${name} has no value` };
    const { sensitive, value } = entry as { sensitive?: unknown; value: unknown };
    outputs[name] = { sensitive: sensitive === true, value };
  }
  return { ok: true, outputs };
}

/** Secret data keys: Kubernetes' rule (`[-._a-zA-Z0-9]+`); OpenTofu's output names always fit it. */
const SECRET_KEY = /^[-._a-zA-Z0-9]+$/;

/** What the runner writes and reports. */
export interface OutputsSecretContent {
  /** The Secret's `data`: one key per output, base64 of the string, or of the JSON of any other value. */
  data: Record<string, string>;
  /** Names of the non-sensitive outputs, sorted, at most MAX_LISTED_OUTPUTS: what the status lists. */
  listed: string[];
  /** The text of every sensitive value (and its JSON leaves), for the runner's redactor. */
  secrets: string[];
  /** Names no Secret key can carry (none from OpenTofu); they fail the write, by name. */
  unfit: string[];
}

/** The text an output is stored as: a string as it is (what a consumer mounts), anything else as JSON. */
export function outputText(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value);
}

/** The Secret content of the outputs; pure. */
export function outputsSecretContent(outputs: Record<string, OutputValue>): OutputsSecretContent {
  const data: Record<string, string> = {};
  const listed: string[] = [];
  const secrets: string[] = [];
  const unfit: string[] = [];
  for (const name of Object.keys(outputs).sort()) {
    const output = outputs[name] as OutputValue;
    if (!SECRET_KEY.test(name)) {
      unfit.push(name);
      continue;
    }
    const text = outputText(output.value);
    data[name] = Buffer.from(text, 'utf8').toString('base64');
    if (output.sensitive) secrets.push(text, ...secretTexts(output.value as SecretJson));
    else listed.push(name);
  }
  return { data, listed: listed.slice(0, MAX_LISTED_OUTPUTS), secrets, unfit };
}
