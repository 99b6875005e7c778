import { describe, expect, it } from 'vitest';
import type { Kubectl } from '../../../src/local/kubectl.ts';
import { type ObjectView, renderView, runLiveView } from '../../../src/local/live-view.ts';

const ready = { type: 'Ready', status: 'True', reason: 'Provisioned' };

/** The REASON cell of the one object's row. */
function reasonCell(object: ObjectView): string {
  const [header, row] = renderView([object], []);
  const start = header?.indexOf('REASON') ?? -1;
  const end = header?.indexOf('LAST RUN') ?? -1;
  return row?.slice(start, end).trim() ?? '';
}

describe('the live view', () => {
  it('shows the wait reason before the Ready reason, and the Ready reason at rest', () => {
    const base: ObjectView = { kind: 'TerraformMachine', metadata: { name: 'm-a' } };
    expect(reasonCell({ ...base, status: { conditions: [ready] } })).toBe('Provisioned');
    expect(
      reasonCell({ ...base, status: { conditions: [ready], waitReason: 'WaitingForDependencies' } }),
    ).toBe('WaitingForDependencies');
  });

  it('says a deleting object is deleting, and what its destroy waits for', () => {
    const deleting: ObjectView = {
      kind: 'TerraformMachine',
      metadata: { name: 'm-a', deletionTimestamp: '2026-12-05T00:00:00Z' },
    };
    expect(reasonCell({ ...deleting, status: { conditions: [ready] } })).toBe('Deleting');
    expect(reasonCell({ ...deleting, status: { conditions: [ready], waitReason: 'StateMissing' } })).toBe(
      'Deleting (StateMissing)',
    );
  });

  it('lists the Jobs oldest first with their state and how long they took', () => {
    const lines = renderView(
      [],
      [
        {
          metadata: { name: 'm-a-apply-2', creationTimestamp: '2026-12-05T00:01:00Z' },
          status: { active: 1, startTime: '2026-12-05T00:01:01Z' },
        },
        {
          metadata: { name: 'm-a-apply-1', creationTimestamp: '2026-12-05T00:00:00Z' },
          status: {
            conditions: [{ type: 'Complete', status: 'True' }],
            startTime: '2026-12-05T00:00:01Z',
            completionTime: '2026-12-05T00:00:31Z',
          },
        },
      ],
    );
    const jobs = lines.slice(lines.indexOf('') + 1);
    expect(jobs.map((line) => line.split(/\s+/))).toEqual([
      ['JOB', 'STATE', 'TOOK'],
      ['m-a-apply-1', 'Complete', '30s'],
      ['m-a-apply-2', 'Running'],
    ]);
  });

  it.each([
    { failure: 'a read that fails', cause: { code: 1 }, shown: true },
    {
      failure: 'a kubectl killed by the Ctrl-C that stops the run',
      cause: { signal: 'SIGINT' },
      shown: false,
    },
    { failure: 'a kubectl killed otherwise (the OOM killer)', cause: { signal: 'SIGKILL' }, shown: true },
  ])('$failure: shown in the view is $shown', async ({ cause, shown }) => {
    const controller = new AbortController();
    let calls = 0;
    const kubectl: Kubectl = {
      run: async () => {
        // A poll reads the three kinds at once: the second poll is the stop's.
        calls += 1;
        if (calls > 3) controller.abort();
        throw new Error('kubectl get terraformclusters: Command failed', { cause });
      },
    };
    const written: string[] = [];
    const out = {
      isTTY: false,
      write: (text: string) => written.push(text),
    } as unknown as NodeJS.WriteStream;
    await runLiveView({ kubectl, namespace: 'team-a', out, signal: controller.signal, intervalMs: 1 });
    expect(
      written.join('').includes('(cannot read the namespace team-a: kubectl get terraformclusters'),
    ).toBe(shown);
  });
});
