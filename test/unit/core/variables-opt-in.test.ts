import { describe, expect, it } from 'vitest';
import { resolveRunInputs } from '../../../src/core/run-inputs.ts';
import type { Snapshot } from '../../../src/core/snapshot.ts';
import {
  envSecretRefs,
  firstNotOptedIn,
  isVariablesSecret,
  notOptedInEvent,
  VARIABLES_OPT_IN_LABEL,
  variablesFromRefs,
} from '../../../src/core/variables-opt-in.ts';
import { type EnvVar, resolveJobsPolicy } from '../../../src/schemas/kinds/jobs-policy.ts';
import type { TargetSpec } from '../../../src/schemas/kinds/target.ts';

// Issue 16 item 1: variables come only from Secrets that carry captf.io/variables=true.

const ENV: EnvVar[] = [
  { name: 'HTTPS_PROXY', value: 'p' },
  { name: 'AWS_SECRET_ACCESS_KEY', valueFrom: { secretKeyRef: { name: 'aws', key: 'secret' } } },
  { name: 'REGION', valueFrom: { configMapKeyRef: { name: 'cfg', key: 'region' } } },
];

function spec(extra: Partial<TargetSpec> = {}): TargetSpec {
  return {
    source: { image: 'registry.example.com/m:1' },
    variablesFrom: [{ name: 'token', secretKeyRef: { name: 'vars', key: 'token' } }],
    backend: { type: 'kubernetes', secretRef: { name: 'backend' } },
    ...extra,
  } as TargetSpec;
}

type Inputs = Pick<
  Snapshot,
  'ref' | 'uid' | 'jobs' | 'status' | 'spec' | 'referencedSecrets' | 'variablesSecretOptIns'
>;

function snap(optIns: Record<string, boolean>, extra: Partial<TargetSpec> = {}): Inputs {
  return {
    ref: { kind: 'TerraformMachine', namespace: 'team-a', name: 'm-a' },
    uid: 'uid-1',
    jobs: [],
    status: {},
    spec: spec(extra),
    referencedSecrets: new Map<string, Record<string, string>>([
      ['vars', { token: 'tok-123-canary' }],
      ['backend', { host: 'h' }],
    ]),
    variablesSecretOptIns: new Map(Object.entries(optIns)),
  };
}

describe('the opt-in label', () => {
  const rows: { id: string; name: string; labels: Record<string, string> | undefined; expected: boolean }[] =
    [
      {
        id: 'L1',
        name: 'the label with value true opts in',
        labels: { [VARIABLES_OPT_IN_LABEL]: 'true' },
        expected: true,
      },
      {
        id: 'L2',
        name: 'any other value does not',
        labels: { [VARIABLES_OPT_IN_LABEL]: 'yes' },
        expected: false,
      },
      { id: 'L3', name: 'no label does not', labels: { app: 'x' }, expected: false },
      { id: 'L4', name: 'no labels at all does not', labels: undefined, expected: false },
    ];
  it.each(rows)('$id $name', ({ labels, expected }) => {
    expect(isVariablesSecret(labels)).toBe(expected);
  });
});

describe('the Secrets variables are read from', () => {
  it('R1 env: only secretKeyRef entries, in spec order (configMapKeyRef and literals are not Secrets)', () => {
    expect(envSecretRefs(ENV)).toEqual([{ secret: 'aws', use: 'env AWS_SECRET_ACCESS_KEY' }]);
  });
  it('R2 variablesFrom: every entry, named by its variable', () => {
    expect(variablesFromRefs(spec().variablesFrom)).toEqual([{ secret: 'vars', use: 'variable token' }]);
    expect(variablesFromRefs(undefined)).toEqual([]);
  });
  it('R3 the first existing Secret without the label is named; a Secret not found is not judged here', () => {
    const refs = [
      { secret: 'gone', use: 'variable a' },
      { secret: 'ok', use: 'variable b' },
      { secret: 'plain', use: 'env C' },
    ];
    const found = firstNotOptedIn(
      refs,
      new Map([
        ['ok', true],
        ['plain', false],
      ]),
    );
    expect(found?.secret).toBe('plain');
    expect(found?.message).toBe(
      'Secret plain (env C) does not carry the label captf.io/variables=true; label it to let this object read variables from it',
    );
    expect(firstNotOptedIn(refs, new Map([['ok', true]]))).toBeUndefined();
  });
  it('R4 the Event is a Warning named by the Secret and the inputs, so a waiting object emits it once', () => {
    const notOptedIn = { secret: 'plain', message: 'm' };
    expect(notOptedInEvent(notOptedIn, 'h1')).toEqual({
      type: 'Warning',
      reason: 'VariablesSecretNotOptedIn',
      action: 'CreateJob',
      note: 'm',
      transitionKey: 'plain@h1',
    });
    expect(notOptedInEvent(notOptedIn, 'h2').transitionKey).not.toBe('plain@h1');
  });
});

describe('resolveRunInputs holds a run back for a Secret that did not opt in', () => {
  const policy = resolveJobsPolicy({ env: ENV });
  const rows: {
    id: string;
    name: string;
    optIns: Record<string, boolean>;
    expected: string;
    secret?: string;
  }[] = [
    {
      id: 'V1',
      name: 'variablesFrom and env Secrets labelled: resolved with the Secret variable',
      optIns: { vars: true, aws: true },
      expected: 'resolved',
    },
    {
      id: 'V2',
      name: 'the variablesFrom Secret unlabelled: not-opted-in naming it',
      optIns: { vars: false, aws: true },
      expected: 'not-opted-in',
      secret: 'vars',
    },
    {
      id: 'V3',
      name: 'the env Secret unlabelled: not-opted-in naming it',
      optIns: { vars: true, aws: false },
      expected: 'not-opted-in',
      secret: 'aws',
    },
    {
      id: 'V4',
      name: 'an env Secret that does not exist is left to the kubelet (optional, or CreateContainerConfigError)',
      optIns: { vars: true },
      expected: 'resolved',
    },
  ];
  it.each(rows)('$id $name', ({ optIns, expected, secret }) => {
    const inputs = resolveRunInputs(snap(optIns), 'apply', policy, {});
    expect(inputs.kind).toBe(expected);
    if (inputs.kind === 'not-opted-in') expect(inputs.secret).toBe(secret);
    if (inputs.kind === 'resolved')
      expect(inputs.source.secretVariables).toEqual({ token: 'tok-123-canary' });
  });

  it('V5 the backend Secret needs no label (the installation configures it, not a variable)', () => {
    const inputs = resolveRunInputs(snap({ vars: true, aws: true }), 'apply', policy, {});
    expect(inputs.kind === 'resolved' && inputs.source.backendSecretData).toEqual({ host: 'h' });
  });

  it('V7 a passphrase Secret the spec names must opt in; the installation default needs not (issue 25 item 3)', () => {
    const stateEncryption = { passphraseSecretRef: { name: 'state-key', key: 'a' } };
    const named = snap({ vars: true, aws: true, 'state-key': false }, { stateEncryption });
    const held = resolveRunInputs(named, 'apply', policy, {});
    expect(held).toMatchObject({ kind: 'not-opted-in', secret: 'state-key' });
    expect(held.kind === 'not-opted-in' && held.message).toContain('stateEncryption.passphraseSecretRef');
    const labelled = resolveRunInputs(
      snap({ vars: true, aws: true, 'state-key': true }, { stateEncryption }),
      'apply',
      policy,
      {},
    );
    expect(labelled.kind === 'resolved' && labelled.source.stateEncryption).toEqual(stateEncryption);
    const siteDefault = { passphraseSecretRef: { name: 'site-key', key: 'k' } };
    const byDefault = resolveRunInputs(snap({ vars: true, aws: true }), 'apply', policy, {}, siteDefault);
    expect(byDefault.kind === 'resolved' && byDefault.source.stateEncryption).toEqual(siteDefault);
  });

  it('V6 an unlabelled Secret is refused before its keys are looked at (no hint which keys it has)', () => {
    const missingKey = snap(
      { vars: false },
      {
        variablesFrom: [{ name: 'token', secretKeyRef: { name: 'vars', key: 'nope' } }],
      },
    );
    const inputs = resolveRunInputs(missingKey, 'apply', resolveJobsPolicy(undefined), {});
    expect(inputs.kind).toBe('not-opted-in');
    expect(JSON.stringify(inputs)).not.toContain('nope');
  });

  it('V7 a variablesFrom Secret that does not exist still waits as a missing dependency', () => {
    const inputs = resolveRunInputs(
      snap({}, { variablesFrom: [{ name: 'x', secretKeyRef: { name: 'absent', key: 'k' } }] }),
      'apply',
      resolveJobsPolicy(undefined),
      {},
    );
    expect(inputs).toEqual({
      kind: 'missing',
      secret: 'absent',
      message: 'Secret absent (variable x) does not exist',
    });
  });
});
