import { describe, expect, it } from 'vitest';
import { observedAfterSpecWrite, withGeneration } from '../../../src/core/observed-generation.ts';
import type { TargetStatus } from '../../../src/schemas/kinds/target.ts';

const condition = (type: string, observedGeneration?: number) => ({
  type,
  status: 'True' as const,
  reason: 'Provisioned',
  message: 'x',
  lastTransitionTime: '2026-01-01T00:00:00Z',
  ...(observedGeneration !== undefined ? { observedGeneration } : {}),
});

const planned: TargetStatus = {
  observedGeneration: 4,
  ready: true,
  appliedGeneration: 4,
  conditions: [condition('Ready', 4), condition('Paused', 3), condition('Legacy')],
};

describe('observedGeneration', () => {
  it('stamps the generation a status was planned from; nothing to write stays nothing', () => {
    expect(withGeneration({ ready: true }, 7)).toEqual({ ready: true, observedGeneration: 7 });
    expect(withGeneration(undefined, 7)).toBeUndefined();
  });

  it("after the step's own spec write: what was observed at the planned generation is observed at the new one", () => {
    const written = observedAfterSpecWrite(planned, 4, 5);
    expect(written.observedGeneration).toBe(5);
    expect(written.conditions?.map((c) => [c.type, c.observedGeneration])).toEqual([
      ['Ready', 5],
      // Observed at another generation, or never stamped: the rule goes by generation, left as they were.
      ['Paused', 3],
      ['Legacy', undefined],
    ]);
    // The run's own generation is a fact about the run, not about what this step observed.
    expect(written.appliedGeneration).toBe(4);
    expect(written.ready).toBe(true);
    expect(planned.observedGeneration).toBe(4);
  });

  it('no spec write (the same generation): the status is the one planned', () => {
    expect(observedAfterSpecWrite(planned, 4, 4)).toBe(planned);
  });

  it('a status without a generation or conditions gains none', () => {
    expect(observedAfterSpecWrite({ ready: true }, 4, 5)).toEqual({ ready: true });
  });
});
