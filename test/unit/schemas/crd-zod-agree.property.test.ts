import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import {
  CRON_MAX_LENGTH,
  CRON_PATTERN,
  CronScheduleSchema,
  cronScheduleCoherent,
} from '../../../src/schemas/kinds/cron.ts';
import { KIND_DEFINITIONS } from '../../../src/schemas/kinds/registry.ts';
import {
  crdSpecSchema,
  structuralArbitrary,
  withoutBadVariableNames,
} from '../../fixtures/structural-arbitrary.ts';

/**
 * Issue 23 item 10: what the CRD admits, zod admits. Specs generated from each kind's installed structural
 * schema (infra/crds, built by buildCrd) either parse, or zod refuses them only through rules whose CEL the
 * CRD also carries (test/integration/crd-zod-agree.test.ts asks the real API server about those). A zod
 * refusal the CRD has no rule for is an object stored and then left SpecInvalid; the one such refusal no
 * CRD can make (variable names, withoutBadVariableNames) is set aside.
 */

/**
 * zod issues at a field where no CEL-backed rule refuses the value too: refusals the CRD cannot make. (A
 * value a CEL rule refuses may draw zod's own check at the same field as well, e.g. cron-parser's.)
 */
function issuesWithoutCel(schema: z.ZodType, value: unknown): string[] {
  const result = schema.safeParse(value);
  if (result.success) return [];
  const isCel = (issue: z.core.$ZodIssue) => issue.code === 'custom' && typeof issue.params?.cel === 'string';
  const celPaths = new Set(result.error.issues.filter(isCel).map((issue) => issue.path.join('.')));
  return result.error.issues
    .filter((issue) => !isCel(issue) && !celPaths.has(issue.path.join('.')))
    .map((issue) => `${issue.path.join('.')}: ${issue.message}`);
}

describe('CRD ⇒ zod: every spec the structural schema admits parses, or fails only a CEL-backed rule', () => {
  it.each(KIND_DEFINITIONS.map((definition) => ({ kind: definition.kind, definition })))(
    '$kind',
    ({ definition }) => {
      const arbitrary = structuralArbitrary(crdSpecSchema(definition));
      fc.assert(
        fc.property(arbitrary, (spec) => {
          expect(issuesWithoutCel(definition.spec, withoutBadVariableNames(spec))).toEqual([]);
        }),
        { numRuns: 300 },
      );
    },
  );
});

describe('the drift schedule: the CRD pattern and rule admit only what cron-parser reads', () => {
  it('every schedule matching CRON_PATTERN that cronScheduleCoherent admits parses (2000 schedules)', () => {
    const schedules = fc
      .stringMatching(new RegExp(CRON_PATTERN))
      .filter((text) => text.length <= CRON_MAX_LENGTH && cronScheduleCoherent.holds(text));
    fc.assert(
      fc.property(schedules, (schedule) => {
        expect(CronScheduleSchema.safeParse(schedule).error?.issues ?? []).toEqual([]);
      }),
      { numRuns: 2000 },
    );
  });
});
