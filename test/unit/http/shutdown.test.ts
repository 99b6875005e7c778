import { expect, it } from 'vitest';
import type { StepOutcome } from '../../../src/core/step-outcome.ts';
import { auth, testApp } from './in-memory.ts';

it('closing the app waits for an in-flight step to finish and answer', async () => {
  let release: () => void = () => undefined;
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  let finished = false;
  const t = testApp({
    step: async (ref): Promise<StepOutcome> => {
      await gate;
      finished = true;
      return { ref, action: 'created', reason: 'NoState', requeueAfterSeconds: 60 };
    },
  });
  await t.app.ready();
  const pending = t.app.inject({
    method: 'POST',
    url: '/reconcile/TerraformCluster/team-a/c1',
    headers: auth,
  });
  await new Promise((resolve) => setTimeout(resolve, 20));
  const closed = t.app.close();
  setTimeout(release, 30);
  await closed;
  expect(finished).toBe(true);
  expect((await pending).statusCode).toBe(200);
});
