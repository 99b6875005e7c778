import { randomBytes } from 'node:crypto';
import { ApiException, CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_GROUP, API_VERSION, API_VERSION_NAME } from '../../src/schemas/kinds/api-group.ts';
import type { KindDefinition } from '../../src/schemas/kinds/kind-definition.ts';
import { KIND_DEFINITIONS } from '../../src/schemas/kinds/registry.ts';
import { testStack } from '../env/index.ts';
import {
  crdSpecSchema,
  minimalValue,
  structuralArbitrary,
  withoutBadVariableNames,
} from '../fixtures/structural-arbitrary.ts';

/**
 * Issue 23 item 10, with the real kube-apiserver as the judge of the CEL rules: specs generated from each
 * kind's installed structural schema are created with a server-side dry run (every admission check, nothing
 * stored), and the API server admits exactly the specs zod parses. A spec the API server admits and zod
 * refuses is an object stored and left SpecInvalid; the reverse, a spec the controller could run that
 * `kubectl apply` refuses. TerraformPlan is left out: the controller writes it and an admission policy
 * (infra/admission/approval-policy.yaml) holds its approver to the caller, which zod cannot know.
 */

const namespace = `agree-${randomBytes(3).toString('hex')}`;
/** Dry-run creates per kind: seven kinds, about 175 in all, a few seconds against the local API server. */
const CASES_PER_KIND = 25;

let kc: KubeConfig;
let objects: CustomObjectsApi;

beforeAll(async () => {
  kc = new KubeConfig();
  kc.loadFromFile(testStack().kubeconfigPath);
  objects = kc.makeApiClient(CustomObjectsApi);
  await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: namespace } } });
});

afterAll(async () => {
  await kc.makeApiClient(CoreV1Api).deleteNamespace({ name: namespace });
});

/** The API server's verdict on a dry-run create: admitted, or refused with its message (422). */
async function admits(
  definition: KindDefinition,
  name: string,
  spec: unknown,
): Promise<{ admitted: true; stored: { spec: unknown } } | { admitted: false; message: string }> {
  try {
    const stored = await objects.createNamespacedCustomObject({
      group: API_GROUP,
      version: API_VERSION_NAME,
      namespace,
      plural: definition.plural,
      body: { apiVersion: API_VERSION, kind: definition.kind, metadata: { name }, spec },
      dryRun: 'All',
    });
    return { admitted: true, stored: stored as { spec: unknown } };
  } catch (error) {
    if (error instanceof ApiException && error.code === 422) {
      return { admitted: false, message: String(error.body) };
    }
    throw error;
  }
}

const judged = KIND_DEFINITIONS.filter((definition) => definition.kind !== 'TerraformPlan');

describe('the API server admits exactly the specs zod parses (generated from the CRDs)', () => {
  it.each(judged.map((definition) => ({ kind: definition.kind, definition })))(
    '$kind',
    async ({ definition }) => {
      let admitted = 0;
      await fc.assert(
        fc.asyncProperty(structuralArbitrary(crdSpecSchema(definition)), async (spec) => {
          // Variable names are the one check no CRD can make (withoutBadVariableNames): set aside, A07 pins it.
          const zod = definition.spec.safeParse(withoutBadVariableNames(spec));
          const api = await admits(definition, `g-${randomBytes(4).toString('hex')}`, spec);
          if (api.admitted) admitted += 1;
          expect(
            api.admitted,
            `API server: ${api.admitted ? 'admitted' : api.message}; zod: ${zod.error?.message ?? 'parsed'}`,
          ).toBe(zod.success);
        }),
        // The smallest spec first: the run always reaches one both sides admit (checked below).
        { numRuns: CASES_PER_KIND, examples: [[minimalValue(crdSpecSchema(definition))]] },
      );
      // Not vacuous: the generator reaches specs both sides admit, not only ones both refuse.
      expect(admitted).toBeGreaterThan(0);
    },
  );
});

describe('values the CRD used to admit and zod refused are refused at admission, saying why', () => {
  const machine = (spec: Record<string, unknown>) => ({
    source: { image: 'registry.example.com/m:1' },
    ...spec,
  });
  const definition = KIND_DEFINITIONS.find((d) => d.kind === 'TerraformMachine') as KindDefinition;
  it.each([
    {
      id: 'A01',
      name: 'a 0s drift interval',
      spec: { driftCheck: { interval: '0s' } },
      message: 'must be between 1m and 8760h',
    },
    {
      id: 'A02',
      name: 'a 30s refresh interval',
      spec: { refresh: { interval: '30s' } },
      message: 'must be between 1m and 8760h',
    },
    {
      id: 'A03',
      name: 'a 1000000h interval (past five digits a part)',
      spec: { refresh: { interval: '1000000h' } },
      message: 'spec.refresh.interval',
    },
    {
      id: 'A04',
      name: 'a backwards cron range',
      spec: { driftCheck: { schedule: '30-10 * * * *' } },
      message: 'schedule ranges must run upwards',
    },
    {
      id: 'A05',
      name: 'a cron day no month has',
      spec: { driftCheck: { schedule: '0 0 31 2 *' } },
      message: 'a day of month 30 or 31 needs month *',
    },
    {
      id: 'A06',
      name: 'a cron with six fields',
      spec: { driftCheck: { schedule: '0 0 * * * *' } },
      message: 'spec.driftCheck.schedule',
    },
    {
      id: 'A08',
      name: 'an empty quantity',
      spec: { jobs: { resources: { requests: { cpu: '' } } } },
      message: 'a quantity is a number or a string',
    },
    {
      id: 'A09',
      name: 'an integer past 2^53',
      spec: { jobs: { tolerations: [{ tolerationSeconds: 2 ** 60 }] } },
      message: 'tolerationSeconds',
    },
    {
      id: 'A14',
      name: 'a TF_TOKEN_ registry token with a literal value',
      spec: { jobs: { env: [{ name: 'TF_TOKEN_registry_example_com', value: 'literal-token' }] } },
      message: 'takes its value from a Secret only',
    },
    {
      id: 'A15',
      name: 'a TF_TOKEN_ registry token from a ConfigMap',
      spec: {
        jobs: {
          env: [{ name: 'TF_TOKEN_example_com', valueFrom: { configMapKeyRef: { name: 'c', key: 'k' } } }],
        },
      },
      message: 'takes its value from a Secret only',
    },
    {
      id: 'A16',
      name: 'a TF_TOKEN_ name with a dot, and another TF_ name from a Secret',
      spec: {
        jobs: {
          env: [
            { name: 'TF_TOKEN_a.b', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } },
            { name: 'TF_LOG', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } },
          ],
        },
      },
      message: 'is reserved',
    },
    {
      id: 'A17',
      name: 'a state encryption fallback naming the passphrase itself',
      spec: {
        stateEncryption: {
          passphraseSecretRef: { name: 'key', key: 'a' },
          fallback: { passphraseSecretRef: { name: 'key', key: 'a' } },
        },
      },
      message: 'names the passphrase itself',
    },
    {
      id: 'A18',
      name: 'a state encryption fallback with both an old passphrase and unencrypted',
      spec: {
        stateEncryption: {
          passphraseSecretRef: { name: 'key', key: 'b' },
          fallback: { passphraseSecretRef: { name: 'key', key: 'a' }, unencrypted: true },
        },
      },
      message: 'one of them',
    },
    {
      id: 'A19',
      name: "a passphrase in one of the controller's Secrets",
      spec: { stateEncryption: { passphraseSecretRef: { name: 'captf-plan-key-m-x', key: 'hmac-key' } } },
      message: 'may not start with captf-',
    },
  ])('$id $name', async ({ spec, message }) => {
    expect(definition.spec.safeParse(machine(spec)).success).toBe(false);
    const api = await admits(definition, 'refused', machine(spec));
    expect(api.admitted).toBe(false);
    if (!api.admitted) expect(api.message).toContain(message);
  });

  it('A07 a variable name starting with a digit is the one known disagreement: stored, and zod refuses it', async () => {
    const spec = machine({ variables: { '1bad': 'x' } });
    expect(definition.spec.safeParse(spec).error?.issues.map((issue) => issue.code)).toEqual(['invalid_key']);
    expect(definition.spec.safeParse(withoutBadVariableNames(spec)).success).toBe(true);
    expect((await admits(definition, 'known', spec)).admitted).toBe(true);
  });

  it.each([
    { id: 'A10', name: 'a 1m drift interval', spec: { driftCheck: { interval: '1m' } } },
    {
      id: 'A11',
      name: 'a day-31 schedule over every month',
      spec: { driftCheck: { schedule: '0 0 31 * *' } },
    },
    { id: 'A12', name: 'a list schedule on weekdays', spec: { driftCheck: { schedule: '15 9,17 * * 1-5' } } },
    {
      id: 'A13',
      name: 'variables with JSON values of every kind',
      spec: { variables: { a: 1, b_c: [true, null], d: { e: 'f' }, unset: null } },
    },
    {
      id: 'A20',
      name: 'a TF_TOKEN_<host> registry token from a Secret',
      spec: {
        jobs: {
          env: [
            {
              name: 'TF_TOKEN_registry_example__corp_com',
              valueFrom: { secretKeyRef: { name: 'registry', key: 'token' } },
            },
          ],
        },
      },
    },
    {
      id: 'A21',
      name: 'state encryption with a rotation fallback, and with an unencrypted one',
      spec: {
        stateEncryption: {
          passphraseSecretRef: { name: 'key', key: 'b' },
          fallback: { passphraseSecretRef: { name: 'key', key: 'a' } },
        },
      },
    },
    {
      id: 'A22',
      name: 'state encryption turned on for a plain state',
      spec: {
        stateEncryption: { passphraseSecretRef: { name: 'key', key: 'a' }, fallback: { unencrypted: true } },
      },
    },
  ])('$id $name is admitted, as zod parses it', async ({ spec }) => {
    expect(definition.spec.safeParse(machine(spec)).success).toBe(true);
    const api = await admits(definition, `ok-${randomBytes(3).toString('hex')}`, machine(spec));
    // Admitted as written: the API server prunes nothing zod kept (a null variable stays null).
    expect(api.admitted && api.stored.spec).toMatchObject(machine(spec));
  });
});
