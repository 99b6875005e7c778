// The pure core's cost (DESIGN.md section 3 DecideOp, section 7 classification, section 9 names, section 7
// pruning) on realistic snapshots: a TerraformMachine with 0, 10 and 100 retained Jobs. Each figure is the
// median of several calibrated rounds; the ratios put a decision next to a JSON.parse of the objects the
// step reads anyway, so readers see where a step's CPU goes.
import { classifyJob } from '../src/core/classify.ts';
import { type DecideInput, decideOp } from '../src/core/decide.ts';
import { inputsHash, inputsOf } from '../src/core/inputs-hash.ts';
import { type JobRecord, jobRecord } from '../src/core/job-record.ts';
import { jobName } from '../src/core/names.ts';
import { selectJobsToPrune } from '../src/core/prune.ts';
import type { JobView } from '../src/core/views.ts';
import type { TerraformMachineSpec } from '../src/schemas/kinds/terraform-machine.ts';
import { printMachine } from './lib/machine.ts';
import {
  ago,
  appliedResult,
  BENCH_NOW,
  finishedJob,
  finishedPod,
  INPUTS_HASH,
  MACHINE_NAME,
  MACHINE_UID,
  machineObject,
  retainedJobs,
} from './lib/objects.ts';
import { printRatio, printTable } from './lib/table.ts';
import { measureThroughput, type Throughput } from './lib/throughput.ts';

printMachine();
const JOB_COUNTS = [0, 10, 100] as const;
const rows: (string | number)[][] = [];

function bench(name: string, op: () => unknown): Throughput {
  const figure = measureThroughput(op);
  rows.push([name, figure.opsPerSecond, figure.nsPerOp, figure.wallNsPerOp]);
  return figure;
}

function recordsOf(jobs: readonly JobView[]): JobRecord[] {
  return jobs.flatMap((job) => {
    const record = jobRecord(job);
    return record === undefined ? [] : [record];
  });
}

/** The input the planner builds for DecideOp from the machine above (src/core/planner.ts). */
function decideInput(records: readonly JobRecord[]): DecideInput {
  return {
    now: BENCH_NOW,
    uid: MACHINE_UID,
    deleting: false,
    inputsHash: INPUTS_HASH,
    appliedInputsHash: INPUTS_HASH,
    lastSuccess: { apply: ago(7200), drift: ago(600), refresh: ago(1200) },
    hasRun: true,
    driftDetected: false,
    records,
    driftCheck: { enabled: true, action: 'Report' },
    refreshInterval: '1h',
    failedJobsHistoryLimit: 3,
  };
}

const objectText = JSON.stringify(machineObject());
const decideNs: number[] = [];
const listNs: number[] = [];
for (const count of JOB_COUNTS) {
  const jobs = retainedJobs(count);
  const records = recordsOf(jobs);
  const input = decideInput(records);
  // Up to date, nothing due: DecideOp walks every row of the table (its most expensive path).
  const decision = decideOp(input);
  if (decision.kind !== 'idle') throw new Error(`core bench: expected idle, got ${decision.kind}`);
  decideNs.push(bench(`decideOp, ${count} Jobs`, () => decideOp(input)).nsPerOp);
  bench(`jobRecord x ${count} (records from a Job list)`, () => recordsOf(jobs));
  bench(`selectJobsToPrune, ${count} Jobs (limits 3/3)`, () =>
    selectJobsToPrune(records, { successfulJobsHistoryLimit: 3, failedJobsHistoryLimit: 3 }),
  );
  const listText = JSON.stringify({ apiVersion: 'batch/v1', kind: 'JobList', items: jobs });
  listNs.push(
    bench(`JSON.parse Job list, ${count} Jobs (${listText.length} B)`, () => JSON.parse(listText)).nsPerOp,
  );
}
const parse = bench(`JSON.parse TerraformMachine (${objectText.length} B)`, () => JSON.parse(objectText));

const resultText = JSON.stringify(appliedResult());
const job = finishedJob(`captf-m-${MACHINE_NAME}-apply-a3-1a2b3c`);
const onePod = [finishedPod('p-1', 390, 0, resultText)];
bench('classifyJob, succeeded, 1 pod', () => classifyJob({ op: 'apply', job, pods: onePod, now: BENCH_NOW }));
const failedResult = JSON.stringify({
  ...appliedResult(),
  result: 'failed',
  error: {
    kind: 'step',
    step: 'apply',
    summary: 'Error: creating EC2 Instance: InsufficientInstanceCapacity',
  },
});
const threePods = [
  finishedPod('p-1', 390, 1, failedResult),
  finishedPod('p-2', 250, 1, failedResult),
  finishedPod('p-3', 120, 1, failedResult),
];
bench('classifyJob, step failed, 3 pods', () =>
  classifyJob({ op: 'apply', job, pods: threePods, now: BENCH_NOW }),
);

const spec = (machineObject() as { spec: TerraformMachineSpec }).spec;
const bigSpec = (machineObject({ targetBytes: 20_000 }) as { spec: TerraformMachineSpec }).spec;
bench('inputsHash, typical spec', () => inputsHash(inputsOf(spec, 'sha256:refs')));
bench('inputsHash, spec with 20 KB variables', () => inputsHash(inputsOf(bigSpec, 'sha256:refs')));
const nameInput = {
  kind: 'TerraformMachine',
  op: 'apply',
  attempt: 3,
  inputsHash: INPUTS_HASH,
  tick: ago(600),
} as const;
bench('jobName, short object name', () => jobName({ ...nameInput, name: 'm-7' }));
bench('jobName, long object name (hashed)', () => jobName({ ...nameInput, name: MACHINE_NAME.repeat(3) }));

printTable(
  'pure core, one call each (main-thread CPU time, median of 7 rounds; wall time beside it)',
  ['operation', 'ops/s', 'ns/op', 'wall ns/op'],
  rows,
);
process.stdout.write('\n');
JOB_COUNTS.forEach((count, index) => {
  printRatio(
    `decideOp(${count} Jobs) / JSON.parse(object)`,
    (decideNs[index] ?? Number.NaN) / parse.nsPerOp,
    'one decision costs this many parses of the object it decides about',
  );
});
JOB_COUNTS.forEach((count, index) => {
  // An empty list is no I/O worth comparing with.
  if (count === 0) return;
  printRatio(
    `JSON.parse(Job list of ${count}) / decideOp(${count} Jobs)`,
    (listNs[index] ?? Number.NaN) / (decideNs[index] ?? Number.NaN),
    'parsing the Job list the step reads costs this many decisions',
  );
});
