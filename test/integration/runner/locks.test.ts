import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { kubernetesBackend, runRunner, startRunner, stepNames, waitForOutput } from './runner-process.ts';

// State locks (DESIGN.md section 12) with the kubernetes backend against the test API server: the lock is a
// Lease, so a second process, a stale holder and force-unlock are all real.

/** The slow module holds the lock while its local-exec sleeps; this line says it is sleeping. */
const HOLDING = '(local-exec): Executing';

function suffix(): string {
  return `runner-${randomUUID().slice(0, 8)}`;
}

describe('state locks (DESIGN.md section 12)', () => {
  it('a lock held by a live holder: waits the lock timeout, fails with lock id and holder, never unlocks', async () => {
    const backend = kubernetesBackend(suffix());
    const holder = await startRunner({
      flags: ['--op=apply'],
      module: 'slow',
      config: { variables: { sleep_seconds: 12 }, backend },
    });
    await waitForOutput(holder.output, (text) => text.includes(HOLDING), 30_000);

    const contender = await runRunner({
      flags: ['--op=apply', '--lock-timeout=3'],
      module: 'slow',
      config: { variables: { sleep_seconds: 12 }, backend },
    });
    expect(contender.exitCode).toBe(1);
    expect(contender.result.error).toMatchObject({ kind: 'step', step: 'plan' });
    expect(contender.result.error?.summary).toMatch(/^Error acquiring the state lock/);
    expect(contender.result.lock?.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(contender.result.lock?.who).toMatch(/^\S+@\S+$/);
    const plan = contender.result.steps.find((s) => s.name === 'plan');
    expect(plan?.seconds).toBeGreaterThanOrEqual(3);

    // The holder still owned its lock: it finished and released it itself.
    const held = await holder.done;
    expect(held.result.result).toBe('succeeded');
    expect(held.exitCode).toBe(0);
  });

  it('a stale lock with the force-unlock id: unlocked once, the run proceeds; the same id again is no error', async () => {
    const backend = kubernetesBackend(suffix());
    const config = { variables: { sleep_seconds: 60 }, backend };
    // The holder dies without unlocking: its whole process group is killed (runner, tofu, sleep).
    const dead = await startRunner({ flags: ['--op=apply'], module: 'slow', config, detached: true });
    await waitForOutput(dead.output, (text) => text.includes(HOLDING), 30_000);
    process.kill(-(dead.child.pid ?? 0), 'SIGKILL');
    await dead.done.catch(() => undefined);

    const locked = await runRunner({ flags: ['--op=drift', '--lock-timeout=1'], module: 'slow', config });
    expect(locked.result.error?.step).toBe('plan');
    const staleId = locked.result.lock?.id ?? '';
    expect(staleId).toMatch(/^[0-9a-f-]{36}$/);

    const unlocked = await runRunner({
      flags: ['--op=drift', '--lock-timeout=1', `--force-unlock-id=${staleId}`],
      module: 'slow',
      config,
    });
    expect(unlocked.exitCode).toBe(0);
    expect(stepNames(unlocked.result)).toEqual(['prepare', 'init', 'force-unlock', 'plan']);
    expect(unlocked.result.steps[2]?.exit).toBe(0);
    expect(unlocked.result.result).toBe('succeeded');
    expect(unlocked.result.drift?.detected).toBe(true);

    // The controller never retries a stale id, but if an old id comes again it is not an error and no loop.
    const again = await runRunner({
      flags: ['--op=drift', '--lock-timeout=1'],
      module: 'slow',
      config: { ...config, forceUnlockId: staleId },
    });
    expect(again.exitCode).toBe(0);
    expect(stepNames(again.result)).toEqual(['prepare', 'init', 'force-unlock', 'plan']);
    expect(again.result.steps[2]?.exit).not.toBe(0);
    expect(again.result.result).toBe('succeeded');
  });

  it('a force-unlock id that does not match the live lock unlocks nothing: the run waits and reports the lock', async () => {
    const backend = kubernetesBackend(suffix());
    const holder = await startRunner({
      flags: ['--op=apply'],
      module: 'slow',
      config: { variables: { sleep_seconds: 10 }, backend },
    });
    await waitForOutput(holder.output, (text) => text.includes(HOLDING), 30_000);
    const wrongId = randomUUID();
    const run = await runRunner({
      flags: ['--op=drift', '--lock-timeout=1', `--force-unlock-id=${wrongId}`],
      module: 'slow',
      config: { variables: { sleep_seconds: 10 }, backend },
    });
    expect(stepNames(run.result)).toEqual(['prepare', 'init', 'force-unlock', 'plan']);
    expect(run.result.error?.step).toBe('plan');
    expect(run.result.lock?.id).not.toBe(wrongId);
    expect((await holder.done).result.result).toBe('succeeded');
  });
});
