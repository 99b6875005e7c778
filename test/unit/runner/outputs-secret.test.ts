import { describe, expect, it } from 'vitest';
import { createRedactor } from '../../../src/core/redaction.ts';
import { outputsSecretContent, outputText, readOutputsDocument } from '../../../src/runner/outputs-secret.ts';
import { DROP_ORDER, fitResult } from '../../../src/runner/result-document.ts';
import { stepCommand } from '../../../src/runner/steps.ts';
import { MAX_LISTED_OUTPUTS, type RunnerResult } from '../../../src/schemas/result.ts';

// Issue 24 item 3: what the runner puts in the outputs Secret and what it reports (names only).

const CANARY = 'tok-123-canary';

/** `tofu output -json` as OpenTofu prints it. */
const document = JSON.stringify(
  {
    admin_password: { sensitive: true, type: 'string', value: `${CANARY}-password` },
    endpoint: { sensitive: false, type: 'string', value: 'https://m-a.example.com' },
    kubeconfig: {
      sensitive: true,
      type: ['object', { token: 'string' }],
      value: { token: `${CANARY}-kube`, nested: [`${CANARY}-leaf`] },
    },
    ports: { sensitive: false, type: ['list', 'number'], value: [80, 443] },
    enabled: { sensitive: false, type: 'bool', value: true },
  },
  null,
  2,
);

const decoded = (data: Record<string, string>) =>
  Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString('utf8')]));

describe('readOutputsDocument', () => {
  it('reads every output with its value and whether it is sensitive', () => {
    const read = readOutputsDocument(document);
    expect(read.ok && read.outputs.admin_password).toEqual({ sensitive: true, value: `${CANARY}-password` });
    expect(read.ok && read.outputs.ports).toEqual({ sensitive: false, value: [80, 443] });
  });

  it('skips the CLI configuration warnings OpenTofu prints to stdout before the document', () => {
    const warned = `\nWarning: Unable to open CLI configuration file\n\nThe CLI configuration file at "/x" does not exist.\n${document}\n`;
    expect(readOutputsDocument(warned)).toEqual(readOutputsDocument(document));
  });

  it('a module without outputs is an empty object', () => {
    expect(readOutputsDocument('{}\n')).toEqual({ ok: true, outputs: {} });
  });

  it.each([
    ['no JSON', 'Error: oops', 'output -json printed no JSON document'],
    ['an array', '[1]', 'output -json printed no JSON document'],
    ['an output without a value', '{"x": {"sensitive": true}}', 'output -json: output x has no value'],
  ])('%s fails with a message that never quotes the document', (_what, stdout, message) => {
    expect(readOutputsDocument(stdout)).toEqual({ ok: false, message });
  });
});

describe('outputsSecretContent', () => {
  const read = readOutputsDocument(document);
  if (!read.ok) throw new Error(read.message);
  const content = outputsSecretContent(read.outputs);

  it('keeps every output, sensitive ones included: strings as they are, other values as JSON', () => {
    expect(decoded(content.data)).toEqual({
      admin_password: `${CANARY}-password`,
      enabled: 'true',
      endpoint: 'https://m-a.example.com',
      kubeconfig: JSON.stringify({ token: `${CANARY}-kube`, nested: [`${CANARY}-leaf`] }),
      ports: '[80,443]',
    });
    expect(outputText('x')).toBe('x');
    expect(outputText(null)).toBe('null');
  });

  it('lists only the names of the non-sensitive outputs, sorted', () => {
    expect(content.listed).toEqual(['enabled', 'endpoint', 'ports']);
    expect(content.unfit).toEqual([]);
  });

  it('hands every sensitive value and JSON leaf to the redactor, so nothing printed after carries them', () => {
    const redactor = createRedactor(content.secrets);
    const line = `oops ${CANARY}-password ${CANARY}-leaf ${JSON.stringify({ token: `${CANARY}-kube` })}`;
    expect(redactor.redact(line)).not.toContain(CANARY);
  });

  it(`lists at most ${MAX_LISTED_OUTPUTS} names; a name no Secret key can carry is named as unfit`, () => {
    const many = Object.fromEntries(
      Array.from({ length: MAX_LISTED_OUTPUTS + 5 }, (_, i) => [
        `o${String(i).padStart(3, '0')}`,
        { sensitive: false, value: i },
      ]),
    );
    const listed = outputsSecretContent({ ...many, 'bad name': { sensitive: false, value: 1 } });
    expect(listed.listed).toHaveLength(MAX_LISTED_OUTPUTS);
    expect(Object.keys(listed.data)).toHaveLength(MAX_LISTED_OUTPUTS + 5);
    expect(listed.unfit).toEqual(['bad name']);
  });
});

describe('the output step and the result', () => {
  it('runs `output -json`, whose document is read, never relayed', () => {
    const inputs = { lockTimeoutSeconds: 60, varFile: '/w/v.json', planFile: '/w/plan' };
    expect(stepCommand('apply', 'output', inputs)).toEqual({
      args: ['output', '-no-color', '-json'],
      output: 'outputs-document',
      okExits: [0],
    });
  });

  it('over the cap, the listed names go first and the Secret name stays', () => {
    const doc: RunnerResult = {
      version: 1,
      op: 'apply',
      result: 'succeeded',
      steps: [{ name: 'output', exit: 0, seconds: 0.5 }],
      outputsSecret: {
        name: 'm-a-outputs',
        outputs: Array.from({ length: MAX_LISTED_OUTPUTS }, (_, i) => `${'n'.repeat(40)}${i}`),
      },
    };
    const fitted = fitResult(doc);
    expect(DROP_ORDER[0]).toBe('outputsSecret.outputs');
    expect(fitted.dropped).toEqual(['outputsSecret.outputs']);
    expect(fitted.outputsSecret).toEqual({ name: 'm-a-outputs' });
  });
});
