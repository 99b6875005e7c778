import { afterAll, beforeAll, expect, it } from 'vitest';
import { sweepListersOf } from '../../../functions/compose.ts';
import { createObject, createStepEnv, type StepEnv } from './harness.ts';

// CAPTF_WATCH_NAMESPACES on the sweep's real lists (src/core/watch-scope.ts): one list per watched
// namespace, so an installation never reads, and never steps, another's objects.

let a: StepEnv;
let b: StepEnv;

beforeAll(async () => {
  a = await createStepEnv('scope-a');
  b = await createStepEnv('scope-b');
  await createObject(a, 'TerraformMachine', 'm-a');
  await createObject(b, 'TerraformMachine', 'm-b');
  await createObject(b, 'TerraformCluster', 'c-b');
});

afterAll(async () => {
  await a?.close();
  await b?.close();
});

async function listed(watched: string[]): Promise<string[]> {
  const objects = await sweepListersOf(a.kube, watched).listObjects();
  return objects
    .map(({ ref }) => `${ref.kind}/${ref.namespace}/${ref.name}`)
    .filter((key) => key.includes(`/${a.namespace}/`) || key.includes(`/${b.namespace}/`))
    .sort();
}

it('the sweep lists only the watched namespaces', async () => {
  expect(await listed([a.namespace])).toEqual([`TerraformMachine/${a.namespace}/m-a`]);
  expect(await listed([a.namespace, b.namespace])).toEqual(
    [
      `TerraformCluster/${b.namespace}/c-b`,
      `TerraformMachine/${a.namespace}/m-a`,
      `TerraformMachine/${b.namespace}/m-b`,
    ].sort(),
  );
  const everywhere = await sweepListersOf(a.kube, []).listObjects();
  expect(everywhere.some(({ ref }) => ref.namespace === b.namespace)).toBe(true);
  const scoped = await sweepListersOf(a.kube, [a.namespace]).listObjects();
  expect(scoped.every(({ ref }) => ref.namespace === a.namespace)).toBe(true);
  expect(await sweepListersOf(a.kube, [a.namespace]).listJobs()).toEqual([]);
});
