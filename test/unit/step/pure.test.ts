import { describe, expect, it } from 'vitest';
import { jobName } from '../../../src/core/names.ts';
import { isOwnJobName } from '../../../src/core/own-jobs.ts';
import { FINALIZER, preamble } from '../../../src/core/preamble.ts';
import { createRedactor, secretTextsOfSecretValue } from '../../../src/core/redaction.ts';
import { inputSecretTexts } from '../../../src/core/run-inputs.ts';
import {
  armedFailpoints,
  FAILPOINTS,
  type Failpoint,
  FailpointAbort,
  parseFailpoints,
} from '../../../src/step/failpoints.ts';
import { leaseTtlSeconds } from '../../../src/step/leases.ts';

// The pure parts of the step's shell (src/step): table rows with sentence names.

describe('preamble (DESIGN.md section 5 step 2)', () => {
  const rows = [
    {
      id: 'P1',
      name: 'externally managed objects are left alone',
      meta: { annotations: { 'cluster.x-k8s.io/managed-by': 'x' } },
      kind: 'leave-alone',
    },
    { id: 'P2', name: 'a new object gets the finalizer first', meta: {}, kind: 'add-finalizer' },
    {
      id: 'P3',
      name: 'an object with the finalizer proceeds',
      meta: { finalizers: [FINALIZER] },
      kind: 'proceed',
    },
    {
      id: 'P4',
      name: 'a deleting object without our finalizer is not ours',
      meta: { deletionTimestamp: '2026-11-29T12:00:00Z' },
      kind: 'not-ours',
    },
    {
      id: 'P5',
      name: 'a deleting object with the finalizer proceeds (destroy)',
      meta: { finalizers: ['other', FINALIZER], deletionTimestamp: '2026-11-29T12:00:00Z' },
      kind: 'proceed',
    },
  ];
  it.each(rows)('$id $name', ({ meta, kind }) => {
    expect(preamble(meta).kind).toBe(kind);
  });

  it('P6 adding the finalizer keeps the others', () => {
    expect(preamble({ finalizers: ['keep.me/x'] })).toEqual({
      kind: 'add-finalizer',
      reason: 'FinalizerAdded',
      finalizers: ['keep.me/x', FINALIZER],
    });
  });
});

describe('own Job names (lease healing)', () => {
  const own = jobName({
    kind: 'TerraformMachine',
    name: 'web',
    op: 'apply',
    attempt: 3,
    inputsHash: 'h',
    tick: '',
  });
  const other = jobName({
    kind: 'TerraformMachine',
    name: 'web-apply',
    op: 'apply',
    attempt: 1,
    inputsHash: 'h',
    tick: '',
  });
  const long = 'x'.repeat(60);
  const hashed = jobName({
    kind: 'TerraformMachine',
    name: long,
    op: 'destroy',
    attempt: 12,
    inputsHash: 'h',
    tick: '',
  });
  // 31 characters: its destroy Job fits 57 at attempt 1 (plain) but not at attempt 10 (hashed).
  const edge = 'e'.repeat(31);
  const edgeJob = (attempt: number) =>
    jobName({ kind: 'TerraformMachine', name: edge, op: 'destroy', attempt, inputsHash: 'h', tick: '' });
  const rows = [
    { id: 'O1', name: 'a Job of the object is its own', object: 'web', candidate: own, expected: true },
    {
      id: 'O2',
      name: "web does not claim web-apply's Jobs",
      object: 'web',
      candidate: other,
      expected: false,
    },
    { id: 'O3', name: 'a hashed long name is recognised', object: long, candidate: hashed, expected: true },
    { id: 'O4', name: 'a foreign name is not', object: 'web', candidate: 'alice-laptop', expected: false },
    {
      id: 'O5',
      name: 'a plain early attempt is recognised',
      object: edge,
      candidate: edgeJob(1),
      expected: true,
    },
    {
      id: 'O6',
      name: 'a later attempt that no longer fits, hashed, is recognised too',
      object: edge,
      candidate: edgeJob(10),
      expected: true,
    },
  ];
  it.each(rows)('$id $name', ({ object, candidate, expected }) => {
    expect(isOwnJobName('TerraformMachine', object, candidate)).toBe(expected);
  });
});

describe('redaction (C15)', () => {
  const secrets = new Map([['s', { token: 'tok-123-canary', json: '{"pw":"hunter22"}', short: 'ab' }]]);
  const all = createRedactor(Object.values(secrets.get('s') ?? {}).flatMap(secretTextsOfSecretValue));
  it('R1 cuts raw values and strings inside JSON values, leaves short ones', () => {
    expect(all.redact('a tok-123-canary b hunter22 c ab')).toBe('a [redacted] b [redacted] c ab');
  });
  it('R2 only the Secret keys the inputs reference are secret, not whole Secrets', () => {
    const spec = {
      source: { image: 'x' },
      variablesFrom: [{ name: 'token', secretKeyRef: { name: 's', key: 'token' } }],
    } as unknown as Parameters<typeof inputSecretTexts>[0];
    const referenced = createRedactor(inputSecretTexts(spec, secrets));
    expect(referenced.redact('a tok-123-canary b hunter22')).toBe('a [redacted] b hunter22');
  });
});

describe('failpoints', () => {
  it('F1 unset or empty arms none', () => {
    for (const text of [undefined, '', ' , ']) {
      const parsed = parseFailpoints(text);
      if (!parsed.ok) throw new Error(parsed.message);
      expect(() => parsed.failpoints.hit('after-job-create')).not.toThrow();
    }
  });
  it('F2 an armed point throws FailpointAbort naming it; others pass', () => {
    const parsed = parseFailpoints(' after-job-create , after-event');
    if (!parsed.ok) throw new Error(parsed.message);
    expect(() => parsed.failpoints.hit('after-job-create')).toThrow(FailpointAbort);
    expect(() => parsed.failpoints.hit('after-step-lock')).not.toThrow();
  });
  it('F3 a typo is an error, never a silently disarmed crash test', () => {
    expect(parseFailpoints('after-job-creat')).toEqual({
      ok: false,
      message: 'read CAPTF_FAILPOINTS: unknown failpoint(s) after-job-creat',
    });
  });
  it('F4 every failpoint name is unique', () => {
    expect(new Set(FAILPOINTS).size).toBe(FAILPOINTS.length);
  });
  it('F5 a chance fires only when the draw is below it; a bare name fires every time without a draw', () => {
    const draws = [0.9, 0.1, 0.5];
    const failpoints = armedFailpoints([{ point: 'after-event', chance: 0.5 }, 'after-job-create'], 'throw', {
      random: () => draws.shift() ?? 0,
    });
    expect(() => failpoints.hit('after-event')).not.toThrow();
    expect(() => failpoints.hit('after-event')).toThrow(FailpointAbort);
    expect(() => failpoints.hit('after-job-create')).toThrow(FailpointAbort);
    expect(draws).toEqual([0.5]);
  });
  it('F6 exit mode ends the process at a firing point and only there', () => {
    const died: Failpoint[] = [];
    const failpoints = armedFailpoints(['after-lease-take'], 'exit', {
      die: (point) => {
        died.push(point);
        throw new Error('died');
      },
    });
    failpoints.hit('after-step-lock');
    expect(() => failpoints.hit('after-lease-take')).toThrow('died');
    expect(died).toEqual(['after-lease-take']);
  });
  it('F7 the mode and chances parse; anything malformed is an error, the default mode is throw', () => {
    const parsed = parseFailpoints('after-event@1, after-job-create@0.25 ,after-step-lock@.5', ' ');
    if (!parsed.ok) throw new Error(parsed.message);
    expect(() => parsed.failpoints.hit('after-event')).toThrow(FailpointAbort);
    expect(parseFailpoints('after-event', 'exit').ok).toBe(true);
    expect(parseFailpoints('after-event', 'crash')).toEqual({
      ok: false,
      message: 'read CAPTF_FAILPOINT_MODE: unknown mode crash (expected throw or exit)',
    });
    for (const bad of [
      'after-event@0',
      'after-event@1.5',
      'after-event@',
      'after-event@0x1',
      'after-event@-1',
    ])
      expect(parseFailpoints(bad), bad).toEqual({
        ok: false,
        message: `read CAPTF_FAILPOINTS: a chance is a decimal in (0, 1]: ${bad}`,
      });
    expect(parseFailpoints('after-evnt@0.5')).toEqual({
      ok: false,
      message: 'read CAPTF_FAILPOINTS: unknown failpoint(s) after-evnt',
    });
  });
});

describe('leases', () => {
  it('L1 the TTL backstop is the deadline plus 600 + 300 s', () => {
    expect(leaseTtlSeconds(3600)).toBe(4500);
  });
});
