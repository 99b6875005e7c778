import { describe, expect, it } from 'vitest';
import type { FleetMetricsReader } from '../../../src/metrics/fleet.ts';
import { fleetSnapshots } from '../../../src/metrics/fleet-snapshot.ts';
import { createMetrics } from '../../../src/metrics/registry.ts';

/** A store that counts its reads and answers `active` for `captf_jobs_active`; `down` makes every read fail. */
function countingStore() {
  const store = { reads: 0, active: 1, down: false };
  const answer = async <T>(value: T): Promise<T> => {
    store.reads += 1;
    if (store.down) throw new Error('store down');
    return value;
  };
  const reader: FleetMetricsReader = {
    jobTotals: () => answer([]),
    jobsActive: () => answer(store.active),
    lastSuccesses: () => answer([]),
    objects: () => answer([]),
    sizes: () => answer([]),
  };
  return { store, reader };
}

/** The five reads of one snapshot. */
const READS_PER_SNAPSHOT = 5;

describe('fleet snapshots (DESIGN.md section 14: /metrics does not read Redis per scrape)', () => {
  it('answers the kept snapshot while it is younger than the max age, then reads anew', async () => {
    const { store, reader } = countingStore();
    let now = 1_000_000;
    const snapshot = fleetSnapshots(reader, () => undefined, { maxAgeMs: 60_000, nowMs: () => now });
    expect((await snapshot())?.jobsActive).toBe(1);
    store.active = 2;
    now += 59_999;
    expect((await snapshot())?.jobsActive).toBe(1);
    expect(store.reads).toBe(READS_PER_SNAPSHOT);
    now += 1;
    expect((await snapshot())?.jobsActive).toBe(2);
    expect(store.reads).toBe(2 * READS_PER_SNAPSHOT);
  });

  it('concurrent scrapes share one read; max age 0 reads at every scrape', async () => {
    const { store, reader } = countingStore();
    const snapshot = fleetSnapshots(reader, () => undefined, { maxAgeMs: 0, nowMs: () => 0 });
    await Promise.all([snapshot(), snapshot(), snapshot()]);
    expect(store.reads).toBe(READS_PER_SNAPSHOT);
    await snapshot();
    expect(store.reads).toBe(2 * READS_PER_SNAPSHOT);
  });

  it('a failed read is reported once, answers undefined and is not kept: the next scrape tries again', async () => {
    const { store, reader } = countingStore();
    const errors: unknown[] = [];
    const snapshot = fleetSnapshots(reader, (error) => errors.push(error), {
      maxAgeMs: 60_000,
      nowMs: () => 0,
    });
    store.down = true;
    expect(await snapshot()).toBeUndefined();
    expect(errors).toHaveLength(1);
    store.down = false;
    expect((await snapshot())?.jobsActive).toBe(1);
  });

  it('scrapes of a registry within the max age read the store once for every fleet series', async () => {
    const { store, reader } = countingStore();
    let now = 0;
    const metrics = createMetrics(reader, () => undefined, undefined, {
      fleetMaxAgeMs: 60_000,
      nowMs: () => now,
    });
    const first = await metrics.registry.metrics();
    store.active = 7;
    const second = await metrics.registry.metrics();
    expect(store.reads).toBe(READS_PER_SNAPSHOT);
    expect(second).toBe(first);
    expect(second).toMatch(/^captf_jobs_active 1$/m);
    now = 60_000;
    expect(await metrics.registry.metrics()).toMatch(/^captf_jobs_active 7$/m);
  });

  it('captf_build_info names the release and Node.js; process metrics only when asked for', async () => {
    const { reader } = countingStore();
    const plain = await createMetrics(reader, () => undefined).registry.metrics();
    expect(plain).toMatch(
      new RegExp(
        `^captf_build_info\\{version="\\d+\\.\\d+\\.\\d+",node_version="${process.versions.node}"\\} 1$`,
        'm',
      ),
    );
    expect(plain).not.toMatch(/^process_cpu_seconds_total/m);
    const withProcess = await createMetrics(reader, () => undefined, undefined, {
      processMetrics: true,
    }).registry.metrics();
    expect(withProcess).toMatch(/^process_cpu_seconds_total /m);
    expect(withProcess).toMatch(/^nodejs_heap_size_used_bytes /m);
  });
});
