import { describe, expect, it } from 'vitest';
import { lockInfoFrom } from '../../../src/runner/lock-info.ts';

const DETAIL = `Error message: the state is already locked by another tofu client
Lock Info:
  ID:        8c768bbc-fe89-9048-31f9-5952cea6d3cc
  Path:
  Operation: OperationTypeApply
  Who:       root@captf-m-m-a-apply-a1-3f2a9c
  Version:   1.12.6
  Created:   2026-11-29 12:52:08.999438054 +0000 UTC
  Info:

OpenTofu acquires a state lock to protect the state from being written`;

describe('lock info from a lock error (DESIGN.md section 12)', () => {
  it('reads the lock id and the holder', () => {
    expect(
      lockInfoFrom([{ severity: 'error', summary: 'Error acquiring the state lock', detail: DETAIL }]),
    ).toEqual({
      id: '8c768bbc-fe89-9048-31f9-5952cea6d3cc',
      who: 'root@captf-m-m-a-apply-a1-3f2a9c',
    });
  });

  it('ignores other errors and lock errors without an ID', () => {
    expect(lockInfoFrom([{ severity: 'error', summary: 'Invalid value', detail: DETAIL }])).toBeUndefined();
    expect(
      lockInfoFrom([{ severity: 'error', summary: 'Error acquiring the state lock', detail: 'timeout' }]),
    ).toBeUndefined();
  });

  it('keeps the id when the holder is missing', () => {
    const detail = 'Lock Info:\n  ID: abc\n';
    expect(lockInfoFrom([{ severity: 'error', summary: 'Error acquiring the state lock', detail }])).toEqual({
      id: 'abc',
    });
  });
});
