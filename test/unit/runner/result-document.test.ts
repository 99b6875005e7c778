import { describe, expect, it } from 'vitest';
import { DROP_ORDER, fitResult, resultBytes } from '../../../src/runner/result-document.ts';
import { parseRunnerResult, RESULT_MAX_BYTES, type RunnerResult } from '../../../src/schemas/result.ts';

function steps(): RunnerResult['steps'] {
  return [
    { name: 'prepare', exit: 0, seconds: 0.01 },
    { name: 'init', exit: 0, seconds: 1.2 },
    { name: 'apply', exit: 0, seconds: 3.4 },
  ];
}

function big(count: number): RunnerResult {
  return {
    version: 1,
    op: 'apply',
    result: 'succeeded',
    steps: steps(),
    plan: { digest: `sha256:${'a'.repeat(64)}`, add: 1, change: 0, destroy: 0 },
    outputs: {
      providerIDList: Array.from(
        { length: count },
        (_, i) => `aws:///eu-west-1a/i-${String(i).padStart(17, '0')}`,
      ),
      addresses: Array.from({ length: count }, (_, i) => ({
        type: 'InternalIP',
        address: `10.0.${i >> 8}.${i & 255}`,
      })),
      replicas: count,
    },
  };
}

describe('result document fitting (DESIGN.md section 10, C10)', () => {
  it('as the budget shrinks, fields go one by one in a fixed order (outputs first, the error last) and the result always fits', () => {
    const doc: RunnerResult = {
      ...big(20),
      result: 'failed',
      imageDigest: `sha256:${'d'.repeat(64)}`,
      state: { bytes: 123_456, moveLabel: false },
      drift: { detected: true },
      lock: { id: 'lock-id', who: `root@${'h'.repeat(60)}` },
      error: { kind: 'step', step: 'apply', summary: 'x'.repeat(300) },
    };
    // The smallest document: the required fields and every optional one named as dropped.
    const floor = resultBytes({
      version: 1,
      op: 'apply',
      result: 'failed',
      steps: doc.steps,
      dropped: [...DROP_ORDER],
    });
    let previous: string[] = [];
    for (let budget = resultBytes(doc); budget >= floor; budget -= 7) {
      const fitted = fitResult(doc, budget);
      const dropped = fitted.dropped ?? [];
      expect(resultBytes(fitted), `budget ${budget}`).toBeLessThanOrEqual(budget);
      // A smaller budget only ever drops more, never another field first: the order is fixed.
      expect(dropped.slice(0, previous.length), `budget ${budget}`).toEqual(previous);
      expect(parseRunnerResult(JSON.stringify(fitted)).ok).toBe(true);
      previous = dropped;
    }
    expect(previous).toEqual([
      'outputs.addresses',
      'outputs.providerIDList',
      'state',
      'outputs',
      'imageDigest',
      'drift',
      'lock.who',
      'lock',
      'plan',
      'error',
    ]);
  });

  it("C10: a cluster's 64 failure domains over the cap go first, then its exports; its endpoint stays", () => {
    const zone = (i: number) => ({ name: `zone-${i}-${'z'.repeat(40)}`, controlPlane: true });
    const doc: RunnerResult = {
      version: 1,
      op: 'apply',
      result: 'succeeded',
      steps: [{ name: 'apply', exit: 0, seconds: 1 }],
      outputs: {
        controlPlaneEndpoint: { host: '10.20.0.10', port: 6443 },
        failureDomains: Array.from({ length: 64 }, (_, i) => zone(i)),
        exports: { cidr: '10.20.0.0/16', note: 'x'.repeat(900) },
      },
    };
    expect(resultBytes(doc)).toBeGreaterThan(RESULT_MAX_BYTES);
    const fitted = fitResult(doc);
    expect(fitted.dropped).toEqual(['outputs.failureDomains']);
    expect(fitted.outputs).toEqual({
      controlPlaneEndpoint: doc.outputs?.controlPlaneEndpoint,
      exports: doc.outputs?.exports,
    });
    const tight = fitResult(doc, 400);
    expect(tight.dropped).toEqual(['outputs.failureDomains', 'outputs.exports']);
    expect(tight.outputs).toEqual({ controlPlaneEndpoint: doc.outputs?.controlPlaneEndpoint });
  });

  it('a document within the cap is returned as it is', () => {
    const doc = big(2);
    expect(fitResult(doc)).toBe(doc);
  });

  it('C10: a 3,800-byte result with a 1,500-byte budget drops addresses, then ID lists, and names them', () => {
    const doc = big(40);
    expect(resultBytes(doc)).toBeGreaterThan(3000);
    const fitted = fitResult(doc, 1500);
    expect(fitted.dropped).toEqual(['outputs.addresses', 'outputs.providerIDList']);
    expect(fitted.outputs).toEqual({ replicas: 40 });
    expect(resultBytes(fitted)).toBeLessThanOrEqual(1500);
    expect(doc.outputs?.addresses).toHaveLength(40);
  });

  it('C10: over 4096 bytes the fitted document parses as a version 1 result', () => {
    const fitted = fitResult(big(200));
    const text = JSON.stringify(fitted);
    expect(new TextEncoder().encode(text).length).toBeLessThanOrEqual(RESULT_MAX_BYTES);
    const parsed = parseRunnerResult(text);
    expect(parsed.ok && parsed.result.dropped).toEqual(['outputs.addresses', 'outputs.providerIDList']);
  });

  it('drops whole optional fields in order until only the required ones are left', () => {
    const doc: RunnerResult = {
      ...big(5),
      result: 'failed',
      error: { kind: 'step', step: 'apply', summary: 'x'.repeat(400) },
      lock: { id: 'id', who: 'w'.repeat(200) },
      drift: { detected: true },
    };
    const fitted = fitResult(doc, 300);
    expect(fitted.dropped).toEqual([
      'outputs.addresses',
      'outputs.providerIDList',
      'outputs',
      'drift',
      'lock.who',
      'lock',
      'plan',
      'error',
    ]);
    expect(Object.keys(fitted).sort()).toEqual(['dropped', 'op', 'result', 'steps', 'version']);
  });
});
