import { describe, expect, it } from 'vitest';
import type { PlanChanges } from '../../../src/schemas/plan-changes.ts';
import {
  PLAN_CHANGES_LOG_PREFIX,
  planChangesLogLines,
  readPlanChangesLog,
} from '../../../src/schemas/plan-changes-log.ts';

// The readable plan's route from the runner's log to the controller (DESIGN.md section 11).

function changesOf(count: number): PlanChanges {
  const resources = Array.from({ length: count }, (_, i) => ({
    address: `terraform_data.node[${i}]`,
    action: 'update' as const,
    paths: ['input.label', 'ünïcode'],
  }));
  return {
    resources,
    omittedResources: 0,
    destructive: [],
    outputs: [],
    counts: {
      resources: count,
      create: 0,
      update: count,
      delete: 0,
      replace: 0,
      read: 0,
      forget: 0,
      outputs: 0,
    },
  };
}

describe('plan changes in the log', () => {
  it('round-trips a large plan through lines no longer than 16,000 bytes, between other lines', () => {
    const changes = changesOf(1000);
    const lines = planChangesLogLines(JSON.stringify(changes));
    expect(lines.length).toBeGreaterThan(10);
    for (const line of lines) expect(new TextEncoder().encode(line).length).toBeLessThanOrEqual(16_100);
    const log = ['[plan] Plan: 0 to add', ...lines.map((l) => l.trimEnd()), 'captf-runner: result blocked'];
    expect(readPlanChangesLog(log.join('\n'))).toEqual({ ok: true, changes });
  });

  it('reads the newest complete plan of the log', () => {
    const older = planChangesLogLines(JSON.stringify(changesOf(1))).join('');
    const newer = planChangesLogLines(JSON.stringify(changesOf(2))).join('');
    expect(readPlanChangesLog(`${older}${newer}`)).toEqual({ ok: true, changes: changesOf(2) });
  });

  it('says absent, incomplete or invalid, never throwing', () => {
    expect(readPlanChangesLog('captf-runner: result blocked\n')).toMatchObject({
      ok: false,
      reason: 'absent',
    });
    const lines = planChangesLogLines(JSON.stringify(changesOf(400)));
    expect(readPlanChangesLog(lines.slice(1).join(''))).toMatchObject({ ok: false, reason: 'incomplete' });
    expect(readPlanChangesLog(lines.slice(0, -1).join(''))).toMatchObject({
      ok: false,
      reason: 'incomplete',
    });
    expect(readPlanChangesLog(`${PLAN_CHANGES_LOG_PREFIX} 1/1 {nope\n`)).toMatchObject({
      ok: false,
      reason: 'invalid',
    });
    expect(readPlanChangesLog(`${PLAN_CHANGES_LOG_PREFIX} 1/1 {"resources":[]}\n`)).toMatchObject({
      ok: false,
      reason: 'invalid',
    });
  });

  it('ignores a relayed Terraform line that looks like one (relayed lines carry a step prefix)', () => {
    const forged = `[plan] ${PLAN_CHANGES_LOG_PREFIX} 1/1 ${JSON.stringify(changesOf(1))}\n`;
    expect(readPlanChangesLog(forged)).toMatchObject({ ok: false, reason: 'absent' });
  });
});
