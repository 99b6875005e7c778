import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { describe, expect, it } from 'vitest';
import { Interruption } from '../../../src/runner/interruption.ts';
import { runProcess } from '../../../src/runner/tofu-process.ts';
import { kubernetesBackend, runRunner, startRunner, waitForOutput } from './runner-process.ts';

// SIGTERM (DESIGN.md section 10): the kubelet's stop signal reaches the runner, which forwards an interrupt
// to tofu, lets it write state and release the lock, and writes an `interrupted` result.

describe('signals (DESIGN.md section 10)', () => {
  it('SIGTERM mid-apply: state saved, lock released, interrupted result (exit 3) within the stop timeout', async () => {
    const backend = kubernetesBackend(`runner-${randomUUID().slice(0, 8)}`);
    const config = { variables: { sleep_seconds: 120 }, backend };
    const stopTimeoutSeconds = 20;
    const run = await startRunner({
      flags: ['--op=apply', `--stop-timeout=${stopTimeoutSeconds}`],
      module: 'slow',
      config,
    });
    await waitForOutput(run.output, (text) => text.includes('(local-exec): Executing'), 30_000);

    const signalledAt = Date.now();
    run.child.kill('SIGTERM');
    const done = await run.done;
    const stoppedSeconds = (Date.now() - signalledAt) / 1000;

    expect(stoppedSeconds).toBeLessThan(stopTimeoutSeconds);
    expect(done.exitCode).toBe(3);
    expect(done.result.result).toBe('interrupted');
    expect(done.result.steps.at(-1)?.name).toBe('apply');
    expect(done.stdout).toContain('received SIGTERM');

    // Lock released: a run that will not wait for the lock gets it. State saved: `first` was created before
    // the interrupt, so only the interrupted (tainted) `slow` is planned again.
    const after = await runRunner({ flags: ['--op=drift', '--lock-timeout=0'], module: 'slow', config });
    expect(after.result.result).toBe('succeeded');
    expect(after.result.drift).toMatchObject({ detected: true, add: 1 });
  });

  it('a runtime that ignores the interrupt is killed when the stop timeout runs out', async () => {
    const interruption = new Interruption(500, () => {});
    const started = Date.now();
    const end = runProcess({
      file: '/bin/sh',
      args: ['-c', "trap '' INT; echo ready; exec sleep 30"],
      cwd: tmpdir(),
      env: process.env,
      onLine: () => {},
      onStart: (child) => interruption.attach(child),
    });
    await new Promise((r) => setTimeout(r, 200));
    interruption.request('SIGTERM');
    const ended = await end;
    interruption.detach();
    expect(ended).toMatchObject({ kind: 'signaled', signal: 'SIGKILL' });
    expect(interruption.killed).toBe(true);
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});
