import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { HASHED_NAME_LENGTH, jobName, MAX_JOB_NAME_LENGTH, runSecretName } from '../../../src/core/names.ts';
import { isOwnJobName } from '../../../src/core/own-jobs.ts';
import { planName } from '../../../src/core/plan-manifest.ts';
import { buildRunnerIdentity } from '../../../src/core/runner-identity.ts';
import { MAX_STATE_SUFFIX_LENGTH, nameStateSuffix } from '../../../src/core/state-identity.ts';
import { TARGET_KINDS, type TargetKind } from '../../../src/schemas/kinds/api-group.ts';
import { OPS } from '../../../src/schemas/result.ts';
import { planKeySecretName } from '../../../src/step/run-config.ts';

/**
 * Issue 23 item 7: no two objects share a state suffix or a Job name (DESIGN.md sections 2 and 9), over
 * every valid Kubernetes name (DNS-1123 subdomain, up to 253 characters), and every name produced is one
 * the API server and the kubernetes backend accept. The generated names include the shapes that collided
 * before: a machine named with the 16 hex that stand for another object's long name. Fixed seeds, bounded
 * runs, so a failure replays.
 */

const PARAMS = (seed: number, numRuns = 200) => ({ seed, numRuns });

// Independent oracles: Kubernetes' own rules (apimachinery validation), not the product's.

/** IsDNS1123Label. */
function isDns1123Label(s: string): boolean {
  return s.length >= 1 && s.length <= 63 && /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(s);
}

/** IsDNS1123Subdomain: dot-separated DNS-1123 labels, at most 253 characters. */
function isDns1123Subdomain(s: string): boolean {
  return (
    s.length >= 1 &&
    s.length <= 253 &&
    /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/.test(s)
  );
}

/** IsValidLabelValue, non-empty: the backend writes the suffix into the label `tfstateSecretSuffix`. */
function isLabelValue(s: string): boolean {
  return s.length >= 1 && s.length <= 63 && /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/.test(s);
}

const LABEL_CHARS = 'abcdefghijklmnopqrstuvwxyz0123456789-';
const EDGE_CHARS = 'abcdefghijklmnopqrstuvwxyz0123456789';

/** One DNS-1123 label; often with `-` runs, so names look like the codes and separators of the forms. */
const dnsLabel = fc
  .tuple(
    fc.constantFrom(...EDGE_CHARS),
    fc.string({ unit: fc.constantFrom(...LABEL_CHARS), maxLength: 61 }),
    fc.constantFrom(...EDGE_CHARS),
  )
  .map(([first, middle, last]) => (middle === '' && last === first ? first : `${first}${middle}${last}`));

/** A DNS-1123 subdomain of up to 253 characters: labels joined by dots. */
const subdomain = fc
  .array(dnsLabel, { minLength: 1, maxLength: 6 })
  .map((labels) =>
    labels
      .join('.')
      .slice(0, 253)
      .replace(/[-.]+$/, ''),
  )
  .filter(isDns1123Subdomain);

const hex16 = fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: 16, maxLength: 16 });

/** The 16 hex that stand for `name` in a hashed form (SHA-256, as the product computes it). */
function digest16(name: string): string {
  return createHash('sha256').update(name).digest('hex').slice(0, HASHED_NAME_LENGTH);
}

/**
 * Names, with the adversarial ones mixed in: 16-hex names, names of 63 and 253 characters, names that
 * start like a kind code (`m-…`, `mp-…`), and for every long name the name made of its own 16-hex digest
 * (the collision the hashed form must not allow), plain and spelled like a hashed suffix (`m--<hex>`).
 */
const names = fc
  .tuple(
    fc.uniqueArray(
      fc.oneof(
        subdomain,
        hex16,
        fc.constantFrom('x'.repeat(63), 'x'.repeat(253), `${'a'.repeat(62)}.b`, 'p-x', 'x', 'm-x', '0'),
        dnsLabel.map((l) => `${l}${'y'.repeat(253 - l.length)}`),
        fc.tuple(fc.constantFrom('m-', 'mp-', 'c-', 'p-'), dnsLabel).map(([a, b]) => `${a}${b}`),
      ),
      { minLength: 1, maxLength: 12 },
    ),
    fc.boolean(),
  )
  .map(([list, withDigests]) => {
    const digests = withDigests ? list.flatMap((n) => [digest16(n), `m--${digest16(n)}`]) : [];
    return [...new Set([...list, ...digests])].filter(isDns1123Subdomain);
  });

const objects = names.chain((list) =>
  fc.constant(list.flatMap((name) => TARGET_KINDS.map((kind) => ({ kind, name })))),
);

const attempt = fc.oneof(fc.integer({ min: 1, max: 12 }), fc.integer({ min: 1, max: 10 ** 13 - 1 }));
const run = fc.record({
  op: fc.constantFrom(...OPS),
  attempt,
  inputsHash: fc.oneof(
    fc.constant(''),
    fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: 64, maxLength: 64 }),
  ),
  tick: fc.oneof(fc.constant(''), fc.constant('2026-11-29T12:00:00.000Z')),
});

describe('state suffix: one per object (DESIGN.md section 2)', () => {
  it('N1 distinct (kind, name) never share a suffix, hashed or plain', () => {
    fc.assert(
      fc.property(objects, (list) => {
        const seen = new Map<string, string>();
        for (const { kind, name } of list) {
          const suffix = nameStateSuffix(kind, name);
          const key = `${kind}/${name}`;
          expect(seen.get(suffix) ?? key, `${suffix} of ${key}`).toBe(key);
          seen.set(suffix, key);
        }
      }),
      PARAMS(2301, 300),
    );
  });

  it('N2 the 16 hex of a long name, used as a name, gets a suffix of its own', () => {
    const long = 'x'.repeat(63);
    for (const kind of TARGET_KINDS) {
      expect(nameStateSuffix(kind, long)).not.toBe(nameStateSuffix(kind, digest16(long)));
    }
    expect(nameStateSuffix('TerraformMachine', long)).toBe(`m--${digest16(long)}`);
  });

  it('N3 every suffix fits the backend label, and every name made from it is a valid object name', () => {
    fc.assert(
      fc.property(fc.constantFrom<TargetKind>(...TARGET_KINDS), subdomain, (kind, name) => {
        const suffix = nameStateSuffix(kind, name);
        expect(suffix.length).toBeLessThanOrEqual(MAX_STATE_SUFFIX_LENGTH);
        expect(isLabelValue(suffix), suffix).toBe(true);
        const identity = buildRunnerIdentity({
          owner: { apiVersion: 'v', kind, name, namespace: 'ns', uid: 'u' },
          source: { backend: undefined, namespace: 'ns', stateSuffix: suffix },
        });
        const produced = [
          identity.stateSecret?.metadata.name ?? '',
          identity.lockLease?.metadata.name ?? '',
          identity.serviceAccount.metadata.name,
          identity.role.metadata.name,
          planKeySecretName(suffix),
        ];
        expect(identity.stateSecret?.metadata.name).toBe(`tfstate-default-${suffix}`);
        expect(identity.lockLease?.metadata.name).toBe(`lock-tfstate-default-${suffix}`);
        for (const produce of produced) expect(isDns1123Subdomain(produce), produce).toBe(true);
        expect(identity.stateSecret?.metadata.labels.tfstateSecretSuffix).toBe(suffix);
      }),
      PARAMS(2302, 500),
    );
  });
});

describe('Job name: one per (kind, name, op, attempt, hash6) (DESIGN.md section 9)', () => {
  it('N4 Jobs of distinct objects never share a name, whatever their ops, attempts and inputs', () => {
    fc.assert(
      fc.property(
        objects.chain((list) => fc.tuple(fc.constant(list), fc.array(run, { minLength: 1, maxLength: 4 }))),
        ([list, runs]) => {
          const seen = new Map<string, string>();
          for (const { kind, name } of list) {
            for (const r of runs) {
              const job = jobName({ kind, name, ...r });
              const key = `${kind}/${name}`;
              expect(seen.get(job) ?? key, `${job} of ${key}`).toBe(key);
              seen.set(job, key);
            }
          }
        },
      ),
      PARAMS(2303, 200),
    );
  });

  it('N5 Jobs of one object differ when op, attempt or hash6 differ, and it claims each of them', () => {
    fc.assert(
      fc.property(
        fc.constantFrom<TargetKind>(...TARGET_KINDS),
        subdomain,
        fc.uniqueArray(run, {
          minLength: 2,
          maxLength: 6,
          selector: (r) => `${r.op}/${r.attempt}/${r.inputsHash}/${r.tick}`,
        }),
        (kind, name, runs) => {
          const byName = new Map<string, string>();
          for (const r of runs) {
            const job = jobName({ kind, name, ...r });
            const tail = job.slice(job.lastIndexOf(`-${r.op}-a`));
            // Equal names only where op, attempt and hash6 are equal: the tail is all that varies.
            expect(byName.get(job) ?? tail).toBe(tail);
            byName.set(job, tail);
            expect(isOwnJobName(kind, name, job)).toBe(true);
          }
        },
      ),
      PARAMS(2304, 300),
    );
  });

  it('N6 an object never claims another object’s Jobs (lease healing)', () => {
    fc.assert(
      fc.property(objects, run, (list, r) => {
        for (const a of list) {
          for (const b of list) {
            if (a.kind === b.kind && a.name === b.name) continue;
            expect(isOwnJobName(a.kind, a.name, jobName({ ...b, ...r }))).toBe(false);
          }
        }
      }),
      PARAMS(2305, 40),
    );
  });

  it('N7 every Job name, its pods, its per-run Secret and its plan are valid names of the right length', () => {
    fc.assert(
      fc.property(fc.constantFrom<TargetKind>(...TARGET_KINDS), subdomain, run, (kind, name, r) => {
        const job = jobName({ kind, name, ...r });
        expect(job.length).toBeLessThanOrEqual(MAX_JOB_NAME_LENGTH);
        expect(isDns1123Subdomain(job), job).toBe(true);
        // The Job controller names pods `<job>-xxxxx`; the hostname is the pod name cut at 63.
        const pod = `${job}-abcde`;
        expect(pod.length).toBeLessThanOrEqual(63);
        expect(isDns1123Subdomain(pod)).toBe(true);
        // Without dots the hostname is a DNS label too (the name's dots are kept, as before).
        if (!name.includes('.')) expect(isDns1123Label(pod), pod).toBe(true);
        expect(isDns1123Subdomain(runSecretName(job))).toBe(true);
        expect(isDns1123Subdomain(planName(job))).toBe(true);
      }),
      PARAMS(2306, 500),
    );
  });
});
