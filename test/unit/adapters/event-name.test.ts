import { describe, expect, it } from 'vitest';
import { eventNameOf } from '../../../src/adapters/kube/event-name.ts';

describe('eventNameOf', () => {
  const regarding = { name: 'm-a', uid: '0b9d6c1e-1111-2222-3333-444455556666' };

  it('is the same for the same transition, so a repeated step finds its Event already there', () => {
    expect(eventNameOf(regarding, 'JobSucceeded', 'J1')).toBe(eventNameOf(regarding, 'JobSucceeded', 'J1'));
    expect(eventNameOf(regarding, 'JobSucceeded', 'J1')).toMatch(/^m-a\.[0-9a-f]{16}$/);
  });

  it('differs by reason, transition and object incarnation (uid)', () => {
    const names = new Set([
      eventNameOf(regarding, 'JobSucceeded', 'J1'),
      eventNameOf(regarding, 'JobFailed', 'J1'),
      eventNameOf(regarding, 'JobSucceeded', 'J2'),
      eventNameOf({ ...regarding, uid: 'another-uid' }, 'JobSucceeded', 'J1'),
    ]);
    expect(names.size).toBe(4);
  });

  it('stays a valid object name for a 253-character object name', () => {
    const name = eventNameOf({ ...regarding, name: 'a'.repeat(253) }, 'JobSucceeded', 'J1');
    expect(name.length).toBeLessThanOrEqual(253);
  });
});
