import { createHash } from 'node:crypto';
import type { TargetKind } from '../schemas/kinds/api-group.ts';
import type { Op } from '../schemas/result.ts';
import { KIND_CODES } from './job-labels.ts';
import type { JobRecord } from './job-record.ts';

/**
 * Deterministic Job names (DESIGN.md section 9): a retry after a crash computes the same name and finds the
 * Job it created (`AlreadyExists` → adopt), so one decision never makes two Jobs.
 */

/** 57: the Job controller adds `-xxxxx` to pod names, pod hostnames are cut at 63, and Terraform records
 * the hostname as the lock holder (section 12 matches it). Holds for every attempt below 10^14. */
export const MAX_JOB_NAME_LENGTH = 57;
/** Hex characters of SHA-256(name) that stand in for a name too long to fit. */
export const HASHED_NAME_LENGTH = 16;

function sha256Hex(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/**
 * What stands in for `name` where it is too long to fit (DESIGN.md section 9): `-` and the first
 * {@link HASHED_NAME_LENGTH} hex of its SHA-256. A Kubernetes name starts with a letter or digit (DNS-1123),
 * so `<prefix>-` followed by this (`m--<hex>`) is never `<prefix>-<some name>`: the hashed form of one object
 * cannot equal the plain form of another, which a bare `<hex>` could (a machine named with those 16 hex).
 */
export function hashedName(name: string): string {
  return `-${sha256Hex(name).slice(0, HASHED_NAME_LENGTH)}`;
}

/** What a Job name is made of. */
export interface JobNameInput {
  kind: TargetKind;
  /** The object's name. */
  name: string;
  op: Op;
  attempt: number;
  inputsHash: string;
  /** Separates runs with equal inputs: the op's newest success time (RFC 3339), or '' before any. */
  tick: string;
}

/** `hash6`: the first 6 hex of SHA-256 over inputs hash, op, attempt and tick. */
export function hash6(input: Pick<JobNameInput, 'inputsHash' | 'op' | 'attempt' | 'tick'>): string {
  return sha256Hex([input.inputsHash, input.op, String(input.attempt), input.tick].join('\n')).slice(0, 6);
}

/**
 * The two stems an object's Job names start with: `captf-<c|m|mp>-<name>` and the hashed
 * `captf-<c|m|mp>-<hashedName(name)>`. Which one a Job uses depends on its op and attempt (the whole must
 * fit 57), so one object can have Jobs of both.
 */
export function jobNameStems(kind: TargetKind, name: string): { plain: string; hashed: string } {
  return {
    plain: `captf-${KIND_CODES[kind]}-${name}`,
    hashed: `captf-${KIND_CODES[kind]}-${hashedName(name)}`,
  };
}

/**
 * `captf-<c|m|mp>-<name>-<op>-a<attempt>-<hash6>`, at most 57 characters; `name` becomes
 * {@link hashedName} (`captf-m--<16 hex>-…`) when the whole would be longer. Distinct (kind, name, op,
 * attempt, hash6) give distinct names: the kind codes end at the first `-`, the op, attempt and hash6 are
 * read from the right, and only a hashed stem has `--` right after the kind code.
 */
export function jobName(input: JobNameInput): string {
  const stems = jobNameStems(input.kind, input.name);
  const build = (stem: string): string => `${stem}-${input.op}-a${input.attempt}-${hash6(input)}`;
  const full = build(stems.plain);
  return full.length <= MAX_JOB_NAME_LENGTH ? full : build(stems.hashed);
}

/** The name of the next Job, and the names before it that were passed over. */
export interface FreeJobName {
  attempt: number;
  name: string;
  /** Names of earlier attempts held by finished Jobs that are not the object's, in attempt order. */
  skipped: string[];
}

/**
 * The first Job name from attempt `from` on that no finished foreign Job holds (DESIGN.md section 5 step
 * 8): a predecessor of the same name, deleted without its Jobs, left them under the names this object's
 * runs compute, and a finished Job can never go on its own (ours have no TTL). Each skipped name is one of
 * `taken`, so this moves at most `taken.size` attempts past `from`.
 */
export function freeJobName(
  input: Omit<JobNameInput, 'attempt'>,
  from: number,
  taken: ReadonlySet<string>,
): FreeJobName {
  const skipped: string[] = [];
  for (let attempt = from; ; attempt += 1) {
    const name = jobName({ ...input, attempt });
    if (!taken.has(name)) return { attempt, name, skipped };
    skipped.push(name);
  }
}

/** `attempt` = 1 + the highest attempt among the retained Jobs of that op (section 9). */
export function nextAttempt(records: readonly JobRecord[], op: Op): number {
  return 1 + records.filter((r) => r.op === op).reduce((highest, r) => Math.max(highest, r.attempt), 0);
}

/** The per-run Secret of a Job (section 9): `captf-run-<job>`. */
export function runSecretName(job: string): string {
  return `captf-run-${job}`;
}
