import { describe, expect, it } from 'vitest';
import { decideGuard, type GuardDecision, type GuardInput } from '../../../src/runner/guard.ts';

const D1 = `sha256:${'1'.repeat(64)}`;
const D2 = `sha256:${'2'.repeat(64)}`;
const safe = { digest: D1, add: 1, change: 1, destroy: 0, destructive: false };
const destructive = { digest: D1, add: 1, change: 0, destroy: 1, destructive: true };
const empty = { digest: D1, add: 0, change: 0, destroy: 0, destructive: false };

const rows: { id: string; name: string; input: GuardInput; decision: GuardDecision }[] = [
  {
    id: 'G1',
    name: 'no changes apply under Manual without approval',
    input: { plan: empty, changeCount: 0, policy: 'Manual' },
    decision: { kind: 'apply', reason: 'NoChanges' },
  },
  {
    id: 'G2',
    name: 'no changes apply even when an old digest is expected',
    input: { plan: empty, changeCount: 0, policy: 'Automatic', expectedDigest: D2 },
    decision: { kind: 'apply', reason: 'NoChanges' },
  },
  {
    id: 'G3',
    name: 'the approved digest applies a destructive plan',
    input: { plan: destructive, changeCount: 2, policy: 'Automatic', expectedDigest: D1 },
    decision: { kind: 'apply', reason: 'Approved' },
  },
  {
    id: 'G4',
    name: 'the approved digest applies under Manual',
    input: { plan: safe, changeCount: 2, policy: 'Manual', expectedDigest: D1 },
    decision: { kind: 'apply', reason: 'Approved' },
  },
  {
    id: 'G5',
    name: 'another digest is plan-changed, even for a safe plan',
    input: { plan: safe, changeCount: 2, policy: 'Automatic', expectedDigest: D2 },
    decision: { kind: 'plan-changed', reason: 'DigestMismatch' },
  },
  {
    id: 'G6',
    name: 'Manual blocks every change',
    input: { plan: safe, changeCount: 2, policy: 'Manual' },
    decision: { kind: 'blocked', reason: 'ManualPolicy' },
  },
  {
    id: 'G7',
    name: 'Automatic blocks a delete or replace',
    input: { plan: destructive, changeCount: 2, policy: 'Automatic' },
    decision: { kind: 'blocked', reason: 'Destructive' },
  },
  {
    id: 'G8',
    name: 'Automatic applies creates and updates',
    input: { plan: safe, changeCount: 2, policy: 'Automatic' },
    decision: { kind: 'apply', reason: 'NotDestructive' },
  },
];

describe('destructive guard (DESIGN.md section 11)', () => {
  it.each(rows)('$id $name', ({ input, decision }) => {
    expect(decideGuard(input)).toEqual(decision);
  });
});
