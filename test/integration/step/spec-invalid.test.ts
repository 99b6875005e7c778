import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CUSTOM_RESOURCES } from '../../../src/adapters/kube/resources.ts';
import type { ObjectRef } from '../../../src/core/object-ref.ts';
import { FINALIZER } from '../../../src/core/preamble.ts';
import {
  createObject,
  createStepEnv,
  finishJob,
  jobsOf,
  patchSpec,
  result,
  type StepEnv,
  startedObject,
  statusOf,
  stepUntil,
} from './harness.ts';

/**
 * Issue 23 item 10, against the real API server, Job controller and Redis: an object whose spec the API
 * server admits but the controller cannot parse (a variable name that is not a Terraform identifier, the
 * one check no CRD can make; likewise any spec stored before a release tightened the CRD) is deleted.
 * Never applied: it goes at once. Applied: no destroy from guesses, a SpecInvalid that says what to do, and
 * once the spec is fixed (it stays editable while deleting) the destroy runs and the object goes.
 */

const BAD_VARIABLES = { '1bad': 'x' };

let env: StepEnv;

beforeAll(async () => {
  env = await createStepEnv('specinv');
});

afterAll(async () => {
  await env?.close();
});

async function remove(ref: ObjectRef): Promise<void> {
  await env.custom.deleteNamespacedCustomObject({
    ...CUSTOM_RESOURCES[ref.kind],
    namespace: env.namespace,
    name: ref.name,
  });
}

describe('a deleting object whose spec does not parse', () => {
  it('SI10 never applied: SpecInvalid while it lives, the finalizer goes at once when deleted', async () => {
    const ref = await createObject(env, 'TerraformMachine', 'm-bad-fresh', { variables: BAD_VARIABLES });
    const waiting = await stepUntil(env.step(), ref, 'waiting');
    expect(waiting).toMatchObject({ reason: 'SpecInvalid' });
    expect(waiting.message).toBe(
      'spec.variables.1bad: variable names are letters, digits, `_` and `-`, not starting with a digit',
    );
    await remove(ref);
    expect(await env.step()(ref)).toMatchObject({ action: 'finalized', reason: 'DeletingWithoutState' });
    expect(await env.step()(ref)).toMatchObject({ action: 'gone' });
  });

  it('SI11 applied: no destroy while the spec does not parse, a SpecInvalid saying what to do; fixed, it destroys and goes', async () => {
    const { ref, job } = await startedObject(env, 'TerraformMachine', 'm-bad-applied', {
      variables: { ok: 1 },
    });
    await finishJob(env, job, { exitCode: 0, result: result('apply', 'succeeded') });
    await env.step()(ref);
    await patchSpec(env, ref, { variables: BAD_VARIABLES });
    await remove(ref);

    const waiting = await env.step()(ref);
    expect(waiting).toMatchObject({ action: 'waiting', reason: 'SpecInvalid' });
    expect(waiting.message).toContain('spec.variables.1bad: variable names are letters');
    expect(waiting.message).toContain('its destroy cannot run');
    expect(waiting.message).toContain('Fix the spec (it stays editable while the object is deleting)');
    expect(waiting.message).toContain(`remove the finalizer ${FINALIZER}`);
    expect((await statusOf(env, ref)).waitReason).toBe('SpecInvalid');
    expect(await jobsOf(env, ref)).toHaveLength(1);

    // The operator fixes the spec of the deleting object (a merge patch's null drops the bad name).
    await patchSpec(env, ref, { variables: { '1bad': null } });
    const destroy = await env.step()(ref);
    expect(destroy).toMatchObject({ action: 'created', reason: 'Deleting' });
    await finishJob(env, destroy.job ?? '', { exitCode: 0, result: result('destroy', 'succeeded') });
    await env.step()(ref);
    expect(await env.step()(ref)).toMatchObject({ action: 'gone' });
  });
});
