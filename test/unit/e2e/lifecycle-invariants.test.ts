import { describe, expect, it } from 'vitest';
import {
  finishedJobWaitViolations,
  type LifecycleWorld,
  orphanStateViolations,
  terminatingPodViolations,
} from '../../e2e/lifecycle-invariants.ts';

// The pure judgements of the lifecycle suite's checker (test/e2e/lifecycle-invariants.ts), on fixtures.

const T0 = Date.parse('2026-12-03T12:00:00Z');

function world(parts: Partial<LifecycleWorld>): LifecycleWorld {
  return { nowMs: T0, targets: [], pods: [], jobs: [], stateSecrets: [], leases: [], ...parts };
}

const ours = { 'captf.io/managed': 'true' };
const complete = { conditions: [{ type: 'Complete', status: 'True' }] };

describe('terminatingPodViolations', () => {
  const pod = (name: string, deletedMsAgo: number | undefined, labels: Record<string, string> = ours) => ({
    metadata: {
      name,
      labels,
      ...(deletedMsAgo === undefined ? {} : { deletionTimestamp: new Date(T0 - deletedMsAgo).toISOString() }),
    },
  });

  it.each([
    {
      id: 'P1',
      name: 'a pod of ours deleted past the settle period is Terminating',
      pod: pod('p', 30_000),
      want: 1,
    },
    {
      id: 'P2',
      name: 'a pod of ours deleted within the settle period is not yet',
      pod: pod('p', 5_000),
      want: 0,
    },
    { id: 'P3', name: 'a pod of ours not deleted is fine', pod: pod('p', undefined), want: 0 },
    { id: 'P4', name: 'a pod not ours is not judged', pod: pod('p', 30_000, {}), want: 0 },
  ])('$id $name', ({ pod: p, want }) => {
    expect(terminatingPodViolations(world({ pods: [p] }), 20_000)).toHaveLength(want);
  });
});

describe('orphanStateViolations', () => {
  const machine = (name: string, stateSuffix?: string) => ({
    kind: 'TerraformMachine' as const,
    metadata: { name },
    ...(stateSuffix === undefined ? {} : { status: { stateSuffix } }),
  });

  it('S1 a state Secret and Lease of a live object (by its recorded suffix or by its name) are fine', () => {
    const w = world({
      targets: [machine('a'), machine('b', 'old-uid')],
      stateSecrets: [
        { name: 'tfstate-default-m-a', content: 'no-resources' },
        { name: 'tfstate-default-old-uid', content: 'resources' },
      ],
      leases: ['lock-tfstate-default-m-a', 'lock-tfstate-default-old-uid'],
    });
    expect(orphanStateViolations(w)).toEqual([]);
  });

  it('S2 without its object: an empty, unwritten or missing state and its Lease are left behind', () => {
    const w = world({
      stateSecrets: [
        { name: 'tfstate-default-m-gone', content: 'no-resources' },
        { name: 'tfstate-default-m-never', content: 'unwritten' },
      ],
      leases: ['lock-tfstate-default-m-gone', 'lock-tfstate-default-m-nostate', 'unrelated-lease'],
    });
    expect(orphanStateViolations(w)).toEqual([
      expect.stringContaining('Secret tfstate-default-m-gone'),
      expect.stringContaining('Secret tfstate-default-m-never'),
      expect.stringContaining('Lease lock-tfstate-default-m-gone'),
      expect.stringContaining('Lease lock-tfstate-default-m-nostate'),
    ]);
  });

  it.each([
    { id: 'S3', content: 'resources' as const },
    { id: 'S4', content: 'encrypted' as const },
    { id: 'S5', content: 'unreadable' as const },
  ])(
    '$id without its object, a state that may hold resources ($content) is kept with its Lease',
    ({ content }) => {
      const w = world({
        stateSecrets: [{ name: 'tfstate-default-m-kept', content }],
        leases: ['lock-tfstate-default-m-kept'],
      });
      expect(orphanStateViolations(w)).toEqual([]);
    },
  );
});

describe('finishedJobWaitViolations', () => {
  const waiting = (status: Record<string, unknown>) => ({
    kind: 'TerraformMachine' as const,
    metadata: { name: 'm' },
    status,
  });

  it('J1 status.activeJob naming a finished Job', () => {
    const w = world({
      targets: [waiting({ activeJob: { name: 'm-a-1' } })],
      jobs: [{ metadata: { name: 'm-a-1' }, status: complete }],
    });
    expect(finishedJobWaitViolations(w)).toEqual([expect.stringContaining('status.activeJob names m-a-1')]);
  });

  it('J2 status.activeJob naming a Job that runs is fine', () => {
    const w = world({
      targets: [waiting({ activeJob: { name: 'm-a-1' } })],
      jobs: [{ metadata: { name: 'm-a-1' } }],
    });
    expect(finishedJobWaitViolations(w)).toEqual([]);
  });

  it('J3 a WaitingForForeignJob wait naming a finished Job, not one whose name it merely starts', () => {
    const condition = (message: string) => ({
      waitReason: 'WaitingForForeignJob',
      conditions: [{ type: 'Ready', status: 'False', reason: 'WaitingForForeignJob', message }],
    });
    const jobs = [{ metadata: { name: 'm-a-1' }, status: complete }, { metadata: { name: 'm-a-10' } }];
    expect(
      finishedJobWaitViolations(
        world({ targets: [waiting(condition('Job m-a-1 belongs to another object'))], jobs }),
      ),
    ).toEqual([expect.stringContaining('waits WaitingForForeignJob on m-a-1')]);
    expect(
      finishedJobWaitViolations(
        world({ targets: [waiting(condition('Job m-a-10 belongs to another object'))], jobs }),
      ),
    ).toEqual([]);
  });

  it('J4 a wait about no Job (a backoff after a failed one) is not judged', () => {
    const status = {
      waitReason: 'Backoff',
      conditions: [{ type: 'Ready', status: 'False', reason: 'Backoff', message: 'Job m-a-1 failed' }],
    };
    const w = world({
      targets: [waiting(status)],
      jobs: [{ metadata: { name: 'm-a-1' }, status: complete }],
    });
    expect(finishedJobWaitViolations(w)).toEqual([]);
  });
});
