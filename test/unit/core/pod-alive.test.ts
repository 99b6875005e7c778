import { describe, expect, it } from 'vitest';
import { isPodAlive } from '../../../src/core/pods.ts';
import type { PodView } from '../../../src/core/views.ts';

// The API guard (DESIGN.md section 5 step 7) with our result finalizer (`captf.io/result`) holding deleted
// pods: a terminal pod held only by it must not block the next attempt; a Terminating pod still running must.

const DELETED = new Date('2026-11-29T12:05:00Z');

function podOf(fields: { phase: string; nodeName?: string; deleted?: boolean }): PodView {
  return {
    metadata: {
      name: 'p1',
      finalizers: ['captf.io/result'],
      ...(fields.deleted ? { deletionTimestamp: DELETED } : {}),
    },
    spec: { ...(fields.nodeName ? { nodeName: fields.nodeName } : {}) },
    status: { phase: fields.phase },
  };
}

const rows = [
  { id: 'A1', name: 'a running pod is alive', pod: podOf({ phase: 'Running', nodeName: 'n1' }), alive: true },
  {
    id: 'A2',
    name: 'a Terminating pod still running on its node is alive (its grace period runs)',
    pod: podOf({ phase: 'Running', nodeName: 'n1', deleted: true }),
    alive: true,
  },
  {
    id: 'A3 (C07)',
    name: 'a deleted pod that reached Failed, held only by our finalizer, is not alive',
    pod: podOf({ phase: 'Failed', nodeName: 'n1', deleted: true }),
    alive: false,
  },
  {
    id: 'A4',
    name: 'a deleted pod that reached Succeeded, held by our finalizer, is not alive',
    pod: podOf({ phase: 'Succeeded', nodeName: 'n1', deleted: true }),
    alive: false,
  },
  {
    id: 'A5',
    name: 'a pod deleted before any node took it never runs, Pending or not',
    pod: podOf({ phase: 'Pending', deleted: true }),
    alive: false,
  },
  {
    id: 'A6',
    name: 'a Pending pod not deleted may still be scheduled and run',
    pod: podOf({ phase: 'Pending' }),
    alive: true,
  },
  {
    id: 'A7',
    name: 'a deleted Pending pod bound to a node may be starting its containers',
    pod: podOf({ phase: 'Pending', nodeName: 'n1', deleted: true }),
    alive: true,
  },
];

describe('isPodAlive (API guard)', () => {
  it.each(rows)('$id $name', ({ pod, alive }) => {
    expect(isPodAlive(pod)).toBe(alive);
  });
});
