import { TARGET_KINDS, type TargetKind } from '../schemas/kinds/api-group.ts';
import { KINDS } from '../schemas/kinds/registry.ts';

/**
 * The command line of `kubectl captf` (docs/kubectl-plugin.md): a verb, an object as `<kind>/<name>` and
 * kubectl's own connection flags, which kubectl hands a plugin untouched (`--kubeconfig`, `--context`,
 * `-n/--namespace`, `--as`, `--as-group`), so the plugin speaks to the API server as the caller would.
 */

/** The verbs, in the order the usage lists them. */
export const PLUGIN_VERBS = ['status', 'why', 'plan', 'approve', 'logs', 'runs', 'unlock'] as const;
export type PluginVerb = (typeof PLUGIN_VERBS)[number];

/** Verbs that name one object. */
const TARGETED: ReadonlySet<PluginVerb> = new Set(['why', 'plan', 'approve', 'logs', 'runs', 'unlock']);

/** One of our objects as the caller named it. */
export interface PluginTarget {
  kind: TargetKind;
  name: string;
}

/** kubectl's connection flags the plugin honours. */
export interface ConnectionFlags {
  kubeconfig?: string;
  context?: string;
  namespace?: string;
  /** `--as`: impersonate this user (the API server checks the caller may). */
  as?: string;
  /** `--as-group`, repeatable. */
  asGroups: string[];
}

/** A parsed command line. */
export type PluginCommand =
  | { kind: 'help' }
  | {
      kind: 'run';
      verb: PluginVerb;
      target?: PluginTarget;
      connection: ConnectionFlags;
      /** `logs --op`: the newest run of this op. */
      op?: string;
      /** `logs --attempt`: the run of this attempt (with `--op`, of that op). */
      attempt?: number;
      /** `approve --digest`: approve only if the plan still has this digest. */
      digest?: string;
      /** `unlock --lock-id`: the lock the caller checked; the unlock refuses any other. */
      lockId?: string;
    };

/** The usage text (pure). */
export function pluginUsage(): string {
  return [
    'kubectl captf: CAPTF objects from the command line, with your kubeconfig and your rights.',
    '',
    'Usage:',
    '  kubectl captf status [-n NS]                     the live table: Ready, op, reason, last run, Cluster API fields',
    '  kubectl captf why KIND/NAME                      what the next step would do, and why nothing happens (read only)',
    '  kubectl captf plan KIND/NAME                     the pending plan, readable',
    '  kubectl captf approve KIND/NAME [--digest D]     approve the pending plan as yourself',
    '  kubectl captf logs KIND/NAME [--op OP] [--attempt N]   the log of the newest (or that) run',
    '  kubectl captf runs KIND/NAME                     the run history with results',
    '  kubectl captf unlock KIND/NAME [--lock-id ID]    the stale state lock runbook: checks, then unlock',
    '',
    'KIND: terraformcluster (tfc), terraformmachine (tfm), terraformmachinepool (tfmp).',
    'kubectl flags passed through: --kubeconfig, --context, -n/--namespace, --as, --as-group.',
  ].join('\n');
}

/** Our target kind for what the caller typed: kind, plural, singular or short name, any case. */
export function targetKindOf(word: string): TargetKind | undefined {
  const lower = word.toLowerCase().split('.')[0] ?? '';
  return TARGET_KINDS.find((kind) => {
    const definition = KINDS[kind];
    return (
      kind.toLowerCase() === lower ||
      definition.plural === lower ||
      definition.singular === lower ||
      definition.shortNames.includes(lower)
    );
  });
}

/** Parses `kind/name`; throws with a readable message. */
export function parseTarget(text: string): PluginTarget {
  const slash = text.indexOf('/');
  if (slash <= 0 || slash === text.length - 1) throw new Error(`expected KIND/NAME, got "${text}"`);
  const kind = targetKindOf(text.slice(0, slash));
  if (kind === undefined)
    throw new Error(
      `unknown kind "${text.slice(0, slash)}": terraformcluster, terraformmachine or terraformmachinepool`,
    );
  return { kind, name: text.slice(slash + 1) };
}

/** Flags that take a value, by their long name. */
const VALUE_FLAGS = new Set([
  'kubeconfig',
  'context',
  'namespace',
  'as',
  'as-group',
  'op',
  'attempt',
  'digest',
  'lock-id',
]);

/**
 * Parses the plugin's arguments (what follows `kubectl captf`); flags may come anywhere, as `--f v`,
 * `--f=v` or `-n v`. Throws with a readable message on an unknown verb or flag or a missing object.
 */
export function parsePluginArgs(argv: readonly string[]): PluginCommand {
  const connection: ConnectionFlags = { asGroups: [] };
  const values = new Map<string, string>();
  const words: string[] = [];
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i] ?? '';
    if (arg === '-h' || arg === '--help' || arg === 'help') return { kind: 'help' };
    if (!arg.startsWith('-') || arg === '-') {
      words.push(arg);
      continue;
    }
    const [flagPart, inline] = arg.startsWith('--') ? splitOnce(arg.slice(2)) : [arg.slice(1), undefined];
    const flag = flagPart === 'n' ? 'namespace' : flagPart;
    if (!VALUE_FLAGS.has(flag)) throw new Error(`unknown flag ${arg}`);
    const value = inline ?? argv[++i];
    if (value === undefined) throw new Error(`flag ${arg} needs a value`);
    if (flag === 'as-group') connection.asGroups.push(value);
    else values.set(flag, value);
  }
  const [verbWord, targetWord, ...extra] = words;
  if (verbWord === undefined) return { kind: 'help' };
  const verb = PLUGIN_VERBS.find((v) => v === verbWord);
  if (verb === undefined) throw new Error(`unknown command "${verbWord}" (${PLUGIN_VERBS.join(', ')})`);
  if (extra.length > 0) throw new Error(`unexpected arguments: ${extra.join(' ')}`);
  if (TARGETED.has(verb) && targetWord === undefined) throw new Error(`${verb} needs KIND/NAME`);
  if (!TARGETED.has(verb) && targetWord !== undefined) throw new Error(`${verb} takes no KIND/NAME`);
  for (const [flag, value] of values) {
    if (flag === 'kubeconfig') connection.kubeconfig = value;
    else if (flag === 'context') connection.context = value;
    else if (flag === 'namespace') connection.namespace = value;
    else if (flag === 'as') connection.as = value;
  }
  const attemptText = values.get('attempt');
  const attempt = attemptText === undefined ? undefined : Number(attemptText);
  if (attempt !== undefined && !(Number.isInteger(attempt) && attempt > 0))
    throw new Error(`--attempt must be a positive whole number, got "${attemptText}"`);
  const op = values.get('op');
  const digest = values.get('digest');
  const lockId = values.get('lock-id');
  return {
    kind: 'run',
    verb,
    ...(targetWord === undefined ? {} : { target: parseTarget(targetWord) }),
    connection,
    ...(op === undefined ? {} : { op }),
    ...(attempt === undefined ? {} : { attempt }),
    ...(digest === undefined ? {} : { digest }),
    ...(lockId === undefined ? {} : { lockId }),
  };
}

function splitOnce(text: string): [string, string | undefined] {
  const at = text.indexOf('=');
  return at === -1 ? [text, undefined] : [text.slice(0, at), text.slice(at + 1)];
}
