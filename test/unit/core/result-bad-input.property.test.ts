import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type Classification,
  type ClassificationWarning,
  type ClassifyInput,
  classifyJob,
  EVIDENCE,
  EVIDENCE_TABLE,
} from '../../../src/core/classify.ts';
import { lastRunOf } from '../../../src/core/record-run.ts';
import { NO_REDACTION } from '../../../src/core/redaction.ts';
import type { JobView, PodView } from '../../../src/core/views.ts';
import { TARGET_KINDS } from '../../../src/schemas/kinds/api-group.ts';
import { LastRunSchema, RECORDED_RESULTS, RUN_ERROR_KINDS } from '../../../src/schemas/kinds/status.ts';
import {
  OPS,
  type Op,
  parseRunnerResult,
  RESULT_MAX_BYTES,
  RUN_RESULTS,
  RUNNER_ERROR_KINDS,
  RunnerResultSchema,
  STEP_NAMES,
} from '../../../src/schemas/result.ts';
import { iso, job, pod, record, T0 } from './builders.ts';

/**
 * Issue 13 item 3: bad runner results, generated. Whatever a termination message holds (a cut document, one
 * past the 4096-byte cap, wrong types in any field, fields that contradict each other or the Job, any text),
 * parsing and classification give a defined verdict from their closed sets, never a throw or `undefined`,
 * the same verdict for the same evidence, and a `lastRun` the CRD accepts (a refused status write would
 * leave the object stuck). Fixed seeds and bounded runs, so a failure replays.
 */

const PARAMS = (seed: number, numRuns = 400) => ({ seed, numRuns });
const WARNINGS: readonly ClassificationWarning[] = ['DeadlineRace', 'RunnerContractViolation', 'ExtraPod'];
const PARSE_FAILURES = ['missing', 'truncated', 'not-json', 'invalid'];

// ---------------------------------------------------------------------------------------------------
// Arbitraries: valid documents, then ways to break them

const anyText = (maxLength = 40) =>
  fc.oneof(
    fc.string({ maxLength }),
    fc.string({ unit: 'grapheme', maxLength }),
    fc.string({ unit: 'binary', maxLength }),
  );
const count = fc.nat({ max: 50 });

const outputs = fc.record(
  {
    controlPlaneEndpoint: fc.oneof(
      fc.record({ host: fc.domain(), port: fc.integer({ min: 1, max: 65_535 }) }),
      fc.jsonValue({ maxDepth: 2 }),
    ),
    providerID: fc.oneof(fc.constant('aws:///eu-west-1a/i-0abc'), fc.jsonValue({ maxDepth: 1 })),
    addresses: fc.oneof(
      fc.array(
        fc.record({
          type: fc.constantFrom('Hostname', 'ExternalIP', 'InternalIP', 'Bogus'),
          address: fc.ipV4(),
        }),
        { maxLength: 3 },
      ),
      fc.jsonValue({ maxDepth: 2 }),
    ),
    providerIDList: fc.oneof(
      fc.array(fc.constant('aws:///i-1'), { maxLength: 3 }),
      fc.jsonValue({ maxDepth: 1 }),
    ),
    replicas: fc.oneof(fc.nat({ max: 10 }), fc.jsonValue({ maxDepth: 1 })),
  },
  { requiredKeys: [] },
);

/** A document the schema accepts: any op, result and optional fields, so contradictions come for free. */
const validDocument = fc.record(
  {
    version: fc.constant(1 as const),
    op: fc.constantFrom(...OPS),
    result: fc.constantFrom(...RUN_RESULTS),
    steps: fc.array(
      fc.record({
        name: fc.constantFrom(...STEP_NAMES),
        exit: fc.integer({ min: -1, max: 255 }),
        seconds: fc.double({ min: 0, max: 1e5, noNaN: true }),
      }),
      { maxLength: 20 },
    ),
    error: fc.record(
      {
        kind: fc.constantFrom(...RUNNER_ERROR_KINDS),
        step: fc.constantFrom(...STEP_NAMES),
        summary: anyText(600),
        reason: fc.constant('OutputsInvalid' as const),
      },
      { requiredKeys: ['kind', 'step', 'summary'] },
    ),
    plan: fc.record(
      { digest: fc.string(), add: count, change: count, destroy: count, destructive: fc.boolean() },
      { requiredKeys: ['digest', 'add', 'change', 'destroy'] },
    ),
    drift: fc.record(
      { detected: fc.boolean(), add: count, change: count, destroy: count },
      { requiredKeys: ['detected'] },
    ),
    lock: fc.record({ id: fc.uuid(), who: fc.string() }, { requiredKeys: ['id'] }),
    outputs,
    imageDigest: fc.string(),
    dropped: fc.array(fc.constantFrom('plan', 'drift', 'outputs', 'steps')),
  },
  { requiredKeys: ['version', 'op', 'result', 'steps'] },
);

const FIELDS = [
  'version',
  'op',
  'result',
  'steps',
  'error',
  'plan',
  'drift',
  'lock',
  'outputs',
  'imageDigest',
  'dropped',
];

/** Replaces one field, or one field of a nested object, with a value of any JSON type. */
const wrongTyped = fc
  .tuple(
    validDocument,
    fc.constantFrom(...FIELDS),
    fc.constantFrom(
      'kind',
      'step',
      'summary',
      'reason',
      'digest',
      'add',
      'detected',
      'id',
      'name',
      'exit',
      'host',
    ),
    fc.boolean(),
    fc.jsonValue({ maxDepth: 2 }),
  )
  .map(([doc, top, inner, nested, value]) => {
    const copy: Record<string, unknown> = structuredClone(doc);
    const target = copy[top];
    if (nested && typeof target === 'object' && target !== null) {
      const inside = Array.isArray(target) ? target[0] : target;
      if (typeof inside === 'object' && inside !== null) (inside as Record<string, unknown>)[inner] = value;
    } else copy[top] = value;
    return JSON.stringify(copy);
  });

const encoder = new TextEncoder();
const decoder = new TextDecoder();
/** The kubelet keeps the first 4096 bytes of a termination message, cutting characters in two if need be. */
function kubeletCut(text: string): string {
  return decoder.decode(encoder.encode(text).slice(0, RESULT_MAX_BYTES));
}

/** A document past the cap: a long summary or padding, as the kubelet leaves it or whole. */
const oversize = fc
  .tuple(
    validDocument,
    fc.integer({ min: RESULT_MAX_BYTES, max: 3 * RESULT_MAX_BYTES }),
    fc.constantFrom('x', 'é', '😀', '"'),
    fc.boolean(),
  )
  .map(([doc, bytes, unit, cut]) => {
    const text = JSON.stringify({
      ...doc,
      error: { kind: 'step', step: 'plan', summary: unit.repeat(bytes) },
    });
    return cut ? kubeletCut(text) : text;
  });

/** A strict prefix of a valid document: the pod was killed mid-write, or something else cut it. */
const truncated = validDocument
  .map((doc) => JSON.stringify(doc))
  .chain((text) => fc.nat({ max: text.length - 1 }).map((n) => text.slice(0, n)));

/** Deep enough to fit the 4096-byte cap with the fields around it (2000 levels: 4086 bytes). */
const DEEP = 2_000;
const DEEP_DOCUMENT = `{"version":1,"op":"apply","result":"succeeded","steps":[],"outputs":{"providerID":${'['.repeat(DEEP)}${']'.repeat(DEEP)}}}`;
const odd = fc.constantFrom(
  '',
  ' ',
  '\n',
  'null',
  'true',
  '1',
  '"succeeded"',
  '[]',
  '{}',
  '{"version":1}',
  '{"version":"1","op":"apply","result":"succeeded","steps":[]}',
  '{"version":1,"op":"apply","result":"succeeded","steps":{}}',
  '{"version":1,"op":"apply","result":"succeeded","steps":[],"__proto__":{"result":"failed"}}',
  '{"version":1,"op":"apply","result":"succeeded","steps":[],"constructor":{"prototype":{"polluted":true}}}',
  '{"version":1,"op":"apply","result":"succeeded","steps":[]}{"version":1}',
  '{"version":1,"op":"apply","result":"succeeded","steps":[],"plan":{"digest":"d","add":1e999,"change":0,"destroy":0}}',
  DEEP_DOCUMENT,
  `${'['.repeat(DEEP)}${']'.repeat(DEEP)}`,
  'panic: runtime error: invalid memory address',
  '\u0000\u0001\u0002',
  '\uFEFF{"version":1,"op":"apply","result":"succeeded","steps":[]}',
);

/** Any termination message, or none. */
const message = fc.oneof(
  { weight: 4, arbitrary: validDocument.map((d) => JSON.stringify(d)) },
  { weight: 2, arbitrary: wrongTyped },
  { weight: 2, arbitrary: truncated },
  { weight: 2, arbitrary: oversize },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v) ?? '') },
  { weight: 1, arbitrary: anyText(200) },
  { weight: 2, arbitrary: odd },
  { weight: 1, arbitrary: fc.constant(undefined) },
);

// ---------------------------------------------------------------------------------------------------
// Jobs and pods around the messages

const jobArb: fc.Arbitrary<JobView> = fc
  .tuple(
    fc.constantFrom<[string, string?][]>(
      [['Complete']],
      [['Failed', 'BackoffLimitExceeded']],
      [['Failed', 'DeadlineExceeded']],
      [['FailureTarget', 'DeadlineExceeded']],
      [['Failed', 'PodFailurePolicy']],
      [],
    ),
    fc.option(fc.constantFrom(iso(400), 'not a time', ''), { nil: undefined }),
  )
  .map(([conditions, completionTime]) =>
    job(conditions, completionTime === undefined ? {} : { completionTime, succeeded: 1 }),
  );

const podArb = (name: string): fc.Arbitrary<PodView> =>
  fc
    .record({
      exitCode: fc.oneof(fc.constantFrom(0, 0, 1, 2, 137, 143, -1), fc.integer()),
      reason: fc.option(fc.constantFrom('Error', 'Completed', 'OOMKilled', 'ContainerStatusUnknown'), {
        nil: undefined,
      }),
      message,
      state: fc.constantFrom(
        'terminated',
        'terminated',
        'terminated',
        'no-status',
        'running',
        'pull',
        'never-started',
      ),
      createdAt: fc.nat({ max: 100 }),
      podReason: fc.option(fc.constant('DeadlineExceeded'), { nil: undefined, freq: 5 }),
      disrupted: fc.boolean(),
      imageID: fc.option(
        fc.constantFrom(
          `repo@sha256:${'a'.repeat(64)}`,
          `docker-pullable://r@sha256:${'b'.repeat(64)}`,
          'sha256:abc',
          '',
        ),
        { nil: undefined },
      ),
    })
    .map((p) => {
      const built = pod(
        name,
        p.state === 'no-status'
          ? 'no-status'
          : p.state === 'running'
            ? { running: true }
            : p.state === 'pull'
              ? { waiting: 'ImagePullBackOff' }
              : {
                  exitCode: p.exitCode,
                  ...(p.reason === undefined ? {} : { reason: p.reason }),
                  ...(p.message === undefined ? {} : { message: p.message }),
                  neverStarted: p.state === 'never-started',
                },
        {
          createdAt: p.createdAt,
          disrupted: p.disrupted,
          ...(p.podReason === undefined ? {} : { podReason: p.podReason }),
        },
      );
      const source = built.status?.containerStatuses?.[0];
      if (source && p.imageID !== undefined) source.imageID = p.imageID;
      return built;
    });

const classifyInput: fc.Arbitrary<ClassifyInput> = fc
  .record({
    op: fc.constantFrom(...OPS),
    kind: fc.option(fc.constantFrom(...TARGET_KINDS), { nil: undefined }),
    job: jobArb,
    pods: fc.oneof(
      { weight: 6, arbitrary: podArb('p1').map((p) => [p]) },
      fc.constant([]),
      fc.tuple(podArb('p1'), podArb('p2'), podArb('p3')).map((ps) => ps),
    ),
    observedPullTrouble: fc.boolean(),
    deadlineEnforced: fc.boolean(),
    lockBlocksRun: fc.boolean(),
  })
  .map(({ kind, ...rest }) => ({ ...rest, ...(kind === undefined ? {} : { kind }), now: T0 }));

// ---------------------------------------------------------------------------------------------------
// What every verdict must be

function sourceOf(p: PodView) {
  return p.status?.containerStatuses?.find((c) => c.name === 'source')?.state?.terminated;
}

function expectClassified(input: ClassifyInput, c: Classification): void {
  expect(EVIDENCE).toContain(c.evidence);
  const row = EVIDENCE_TABLE[c.evidence];
  expect(RECORDED_RESULTS).toContain(c.result);
  expect(c).toMatchObject({
    op: input.op,
    result: row.result,
    reason: row.reason[input.op],
    counted: row.counted,
    interruption: row.interruption,
    success: row.success,
    conditionStatus: row.conditionStatus,
  });
  expect(c.reason).toMatch(/^[A-Z][A-Za-z]+$/);
  if (row.errorKind === undefined) expect(c.error).toBeUndefined();
  else {
    expect(RUN_ERROR_KINDS).toContain(c.error?.kind);
    expect(c.error?.summary).toEqual(expect.any(String));
    expect(c.error?.summary.length).toBeGreaterThan(0);
    if (c.error?.step !== undefined) expect(STEP_NAMES).toContain(c.error.step);
  }
  for (const w of c.warnings) expect(WARNINGS).toContain(w);
  expect(Number.isFinite(c.finishedAt.getTime())).toBe(true);
  expect(c.extraPods.length).toBe(Math.max(0, input.pods.length - 1));

  // Contradictions resolve to the stricter reading: a success needs exit 0 and a valid `succeeded`
  // document of this very op, from the pod that decided.
  const winner = input.pods.find((p) => p.metadata.name === c.pod);
  const parsed = parseRunnerResult(winner ? sourceOf(winner)?.message : undefined);
  if (c.success) {
    expect(sourceOf(winner as PodView)?.exitCode).toBe(0);
    expect(parsed.ok && parsed.result.result === 'succeeded' && parsed.result.op === input.op).toBe(true);
  } else expect(c.outputs).toBeUndefined();
  if (parsed.ok) {
    expect(c.runnerResult).toEqual(parsed.result);
    if (parsed.result.op !== input.op) {
      expect(c.success).toBe(false);
      expect(c.warnings).toContain('RunnerContractViolation');
    }
    if (parsed.result.result === 'succeeded' && sourceOf(winner as PodView)?.exitCode !== 0) {
      expect(c.success).toBe(false);
      expect(c.warnings).toContain('RunnerContractViolation');
    }
  } else {
    // Without a readable result nothing is taken from it, and the error kind is `unknown`.
    expect(c.runnerResult).toBeUndefined();
    if (c.error !== undefined) expect(c.error.kind).toBe('unknown');
  }
}

describe('runner results, generated', () => {
  it('parseRunnerResult: a valid document or a named failure, never a throw; cut documents are failures', () => {
    fc.assert(
      fc.property(message, (text) => {
        const parsed = parseRunnerResult(text);
        expect(parseRunnerResult(text)).toEqual(parsed);
        if (parsed.ok) {
          expect(RunnerResultSchema.safeParse(parsed.result).success).toBe(true);
          expect(parsed.result.version).toBe(1);
        } else {
          expect(PARSE_FAILURES).toContain(parsed.reason);
          expect(parsed.message).toMatch(/^read runner result: /);
          // C15: the text may hold anything the pod printed; the message never quotes it.
          if (text !== undefined && text.trim().length >= 12)
            expect(parsed.message).not.toContain(text.trim());
        }
      }),
      {
        ...PARAMS(0x13c1, 500),
        examples: [
          // Found by the classifyJob property: zod's recursive z.json() ran out of stack (a RangeError thrown).
          [DEEP_DOCUMENT],
        ],
      },
    );
  });

  it('a strict prefix of a document never parses: truncated at the cap, else not JSON', () => {
    fc.assert(
      fc.property(truncated, (text) => {
        const parsed = parseRunnerResult(text);
        expect(parsed.ok).toBe(false);
        if (!parsed.ok && text.trim() !== '')
          expect(parsed.reason).toBe(
            encoder.encode(text).length >= RESULT_MAX_BYTES ? 'truncated' : 'not-json',
          );
      }),
      PARAMS(0x13c2, 300),
    );
  });

  it('a document the kubelet cut at 4096 bytes is `truncated`', () => {
    fc.assert(
      fc.property(oversize, (text) => {
        fc.pre(encoder.encode(text).length <= RESULT_MAX_BYTES);
        const parsed = parseRunnerResult(text);
        expect(parsed).toMatchObject({ ok: false, reason: 'truncated' });
      }),
      PARAMS(0x13c3, 200),
    );
  });

  it('classifyJob: a defined, consistent, deterministic verdict for any evidence; its lastRun fits the CRD', () => {
    fc.assert(
      fc.property(classifyInput, (input) => {
        const before = structuredClone(input);
        const c = classifyJob(input);
        expectClassified(input, c);
        // Deterministic, and the evidence is left as it was.
        expect(input).toEqual(before);
        expect(classifyJob(structuredClone(input))).toEqual(c);
        // The status write that records the run must be one the CRD accepts, or the object is stuck.
        const written = lastRunOf(input.job, record(input.op, c.evidence, 400), c, NO_REDACTION);
        const accepted = LastRunSchema.safeParse(written);
        expect(accepted.success, JSON.stringify(accepted.error?.issues.slice(0, 3))).toBe(true);
      }),
      {
        ...PARAMS(0x13c4, 500),
        examples: [
          // Found by this property: a 4086-byte document 2000 levels deep threw RangeError out of classifyJob.
          [
            {
              op: 'apply',
              job: job([['Complete']]),
              pods: [pod('p1', { exitCode: 0, message: DEEP_DOCUMENT })],
              now: T0,
            },
          ],
        ],
      },
    );
  });

  it('contradictory documents of one pod: never a success, always flagged', () => {
    const contradiction = fc
      .tuple(
        validDocument,
        fc.constantFrom<Op>(...OPS),
        fc.integer({ min: 1, max: 255 }),
        fc.constantFrom('op', 'exit', 'outputs-on-failure'),
      )
      .map(([doc, op, exit, which]) => {
        if (which === 'op') {
          const other = OPS.find((o) => o !== op) ?? 'apply';
          return { op, exitCode: 0, doc: { ...doc, op: other, result: 'succeeded' as const } };
        }
        if (which === 'exit')
          return { op, exitCode: exit, doc: { ...doc, op, result: 'succeeded' as const } };
        return {
          op,
          exitCode: exit,
          doc: {
            ...doc,
            op,
            result: 'failed' as const,
            outputs: { controlPlaneEndpoint: { host: 'h', port: 6443 }, providerID: 'aws:///i-1' },
          },
        };
      });
    fc.assert(
      fc.property(
        contradiction,
        fc.constantFrom<[string, string?][]>([['Complete']], [['Failed', 'BackoffLimitExceeded']]),
        (c, conditions) => {
          const input: ClassifyInput = {
            op: c.op,
            job: job(conditions),
            pods: [pod('p1', { exitCode: c.exitCode, message: JSON.stringify(c.doc) })],
            now: T0,
          };
          const verdict = classifyJob(input);
          expectClassified(input, verdict);
          expect(verdict.success).toBe(false);
          expect(verdict.outputs).toBeUndefined();
          if (c.doc.result === 'succeeded') expect(verdict.warnings).toContain('RunnerContractViolation');
        },
      ),
      {
        ...PARAMS(0x13c5, 300),
        examples: [
          // Found by this property: the runner's empty error summary became an empty lastRun.error.summary.
          [
            {
              op: 'apply' as Op,
              exitCode: 1,
              doc: {
                version: 1 as const,
                op: 'apply' as Op,
                result: 'failed' as const,
                steps: [],
                error: { kind: 'step' as const, step: 'prepare' as const, summary: '' },
                outputs: { controlPlaneEndpoint: { host: 'h', port: 6443 }, providerID: 'aws:///i-1' },
              },
            },
            [['Complete']],
          ],
        ],
      },
    );
  });
});
