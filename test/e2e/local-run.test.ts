import { afterAll, beforeAll } from 'vitest';
import { applyObjects, type E2eRun, sampleDocuments, startE2eRun } from './harness.ts';
import { describeSampleLifecycle, SAMPLE_OVERRIDES } from './sample-lifecycle.ts';

// The end-to-end path on the main job's own sample with the bundled relay and timer as the event
// path (the main job's default): the real handlers, relay, timer, local node, runner and OpenTofu, with the
// kubernetes backend on the test API server (test/e2e/sample-lifecycle.ts).

const MINUTE = 60_000;
let run: E2eRun;

beforeAll(async () => {
  run = await startE2eRun('sample');
  await applyObjects(run, sampleDocuments(run, SAMPLE_OVERRIDES));
}, 2 * MINUTE);

afterAll(async () => {
  await run?.close();
}, MINUTE);

describeSampleLifecycle(
  'the sample from nothing to Ready and through its life (DESIGN.md sections 2, 5, 11, 12)',
  () => run,
);
