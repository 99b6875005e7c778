import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createRedisAdapter } from '../../src/adapters/redis/adapter.ts';
import { refKey } from '../../src/core/object-ref.ts';
import { VARIABLES_SECRET_LABELS } from '../../src/core/variables-opt-in.ts';
import { testStack } from '../env/index.ts';
import {
  applyObjects,
  conditionOf,
  type E2eRun,
  handlerAnswers,
  machine,
  patchObject,
  RESOURCE,
  readObject,
  sampleDocuments,
  startE2eRun,
  waitFor,
  waitObject,
  waitReady,
} from './harness.ts';
import { describeSampleLifecycle, SAMPLE_OVERRIDES } from './sample-lifecycle.ts';

// Issue 12: the sample's whole life with Knative Eventing's own adapters as the only event path: the
// ApiServerSource receive adapter (from infra/knative/apiserversource.yaml: all namespaces, our kinds and
// the managed Jobs and Pods, Resource mode) sends every event to /events, and the PingSource
// adapter mtping (infra/knative/pingsource.yaml, on a 1 s schedule) calls /tick. No relay, no local timer.
// Issue 22: a second receive adapter, from infra/knative/secret-apiserversource.yaml (the Secrets waits
// depend on, Reference mode, under captf-secret-events), ends a wait on a Secret with that Secret's event.

const MINUTE = 60_000;
let run: E2eRun;

beforeAll(async () => {
  run = await startE2eRun('knative', { events: 'knative', syncPeriodSeconds: 20 });
  await applyObjects(run, sampleDocuments(run, SAMPLE_OVERRIDES));
}, 3 * MINUTE);

afterAll(async () => {
  await run?.close();
}, MINUTE);

it("Knative's adapters are the event path: no relay runs, events and ticks arrive from them", async () => {
  const { logDir, knative } = run.controller;
  expect(knative).toBeDefined();
  expect(existsSync(join(logDir, 'relay.log'))).toBe(false);
  expect(knative?.apiServerSource('secrets').logPath).toBe(join(logDir, 'apiserver-source-secrets.log'));
  // Ticks from mtping, events from the receive adapter, within a few seconds of start.
  const answers = await waitFor(
    'a /tick and an /events answer',
    async () => handlerAnswers(run),
    (list) => list.some((a) => a.url === '/tick') && list.some((a) => a.url === '/events'),
    MINUTE,
  );
  expect(answers.some((a) => a.url === '/tick' && a.status === 200)).toBe(true);
  expect(answers.filter((a) => a.status >= 500 && a.status !== 503)).toEqual([]);
});

describeSampleLifecycle(
  "the sample from nothing to Ready and through its life, on Knative's own ApiServerSource and PingSource adapters",
  () => run,
  () => {
    it(
      'a change made while the receive adapter is down is not replayed by its restart; the sweep applies it',
      async () => {
        const before = await waitReady(run, RESOURCE.TerraformMachine, 'm-b', MINUTE);
        const knative = run.controller.knative;
        if (!knative) throw new Error('no Knative adapters');
        await knative.apiServerSource().kill();
        await patchObject(run, RESOURCE.TerraformMachine, 'm-b', { spec: { variables: { size: 'large' } } });
        const answered = handlerAnswers(run).filter((a) => a.url === '/events').length;
        await knative.restartApiServerSource();
        // Knative's informers hand their initial list to the store's Replace, which the adapter ignores: the
        // restart sends nothing about objects that exist, and m-b's change waits for the sweep (every 20 s).
        const after = await waitObject(
          run,
          RESOURCE.TerraformMachine,
          'm-b',
          'm-b applied with the size set while the adapter was down',
          (o) =>
            o.status?.lastRun?.inputsHash !== before.status?.lastRun?.inputsHash &&
            o.status?.lastRun?.result === 'succeeded' &&
            conditionOf(o, 'Ready')?.status === 'True',
          2 * MINUTE,
        );
        expect(after.status?.lastRun).toMatchObject({ op: 'apply', plan: { change: 1, destroy: 0 } });
        const events = handlerAnswers(run)
          .filter((a) => a.url === '/events')
          .slice(answered);
        // Handled, or a transient 503/429 (a slow API server or Redis) the sender may retry; never a 500.
        for (const answer of events) expect([200, 202, 429, 503]).toContain(answer.status);
      },
      3 * MINUTE,
    );
  },
);

/** The handlers' `secret woke` lines (src/http/routes/events.ts): a Secret's event and the objects it woke. */
function secretWakes(): {
  secretRef: { namespace: string; name: string };
  woken: { kind: string; name: string }[];
}[] {
  return readFileSync(join(run.controller.logDir, 'controller.log'), 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('{') && line.includes('"secret woke"'))
    .map((line) => JSON.parse(line));
}

it(
  "a wait on a missing variables Secret ends with that Secret's event from Knative's Secret source, not at the 10 min requeue",
  async () => {
    const name = 'm-secret-wait';
    const secret = 'late-vars';
    await applyObjects(run, [
      machine(run, name, {
        variables: { index: 9 },
        variablesFrom: [{ name: 'size', secretKeyRef: { name: secret, key: 'size' } }],
      }),
    ]);
    await waitObject(
      run,
      RESOURCE.TerraformMachine,
      name,
      `${name} waiting for its Secret`,
      (o) => o.status?.waitReason === 'WaitingForDependencies',
      MINUTE,
    );
    // At rest in its wait: its only requeue is the 600 s safety net (DESIGN.md section 6; the sweep only
    // makes sure one exists), nothing sooner (an echo of its own write, a cache-lag retry). From here,
    // within a minute only the Secret's event can end the wait.
    const redis = createRedisAdapter({ url: testStack().redisUrl, keyPrefix: run.keyPrefix });
    try {
      await redis.waitUntilReady(10_000);
      const member = refKey({ kind: 'TerraformMachine', namespace: run.namespace, name });
      await waitFor(
        `${name}'s requeue at the 600 s safety net`,
        async () => {
          const at = await redis.schedule.scheduledAt(member);
          return at.kind === 'scheduled' ? (at.dueMs - Date.now()) / 1000 : undefined;
        },
        (seconds) => seconds !== undefined && seconds > 540,
        MINUTE,
      );
    } finally {
      await redis.close();
    }
    const waiting = await readObject(run, RESOURCE.TerraformMachine, name);
    expect(waiting?.status?.waitReason).toBe('WaitingForDependencies');
    await applyObjects(run, [
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: secret, namespace: run.namespace, labels: { ...VARIABLES_SECRET_LABELS } },
        stringData: { size: 'medium' },
      },
    ]);
    await waitObject(
      run,
      RESOURCE.TerraformMachine,
      name,
      `${name} out of its wait`,
      (o) => o.status?.waitReason !== 'WaitingForDependencies',
      MINUTE,
    );
    // No relay runs and the objects' source watches no Secrets: the Secret's event came from the Secret
    // source's receive adapter.
    const wakes = secretWakes().filter(
      (line) => line.secretRef.namespace === run.namespace && line.secretRef.name === secret,
    );
    expect(wakes.flatMap((line) => line.woken)).toContainEqual(
      expect.objectContaining({ kind: 'TerraformMachine', name }),
    );
    const applied = await waitReady(run, RESOURCE.TerraformMachine, name, 3 * MINUTE);
    expect(applied.status?.lastRun).toMatchObject({ op: 'apply', result: 'succeeded' });
  },
  5 * MINUTE,
);
