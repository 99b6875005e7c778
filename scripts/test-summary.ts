// Prints vitest's JSON report as the plain closing line CI reads: "N passed, N failed[, N skipped]".
// A test that did not run because its file failed (a failing beforeAll, an import error) counts as failed,
// never as skipped. Exits 1 when anything failed, the report is missing, or no test ran, so an empty or
// broken run is never taken for a green one.
import { readFileSync } from 'node:fs';

interface Report {
  numPassedTests: number;
  numFailedTests: number;
  numPendingTests: number;
  numTodoTests: number;
  testResults: { status: string; assertionResults: { status: string }[] }[];
}

const path = process.argv[2] ?? '.test-results/vitest.json';
let report: Report;
try {
  report = JSON.parse(readFileSync(path, 'utf8')) as Report;
} catch (cause) {
  console.log('0 passed, 1 failed');
  console.error(
    `read test report ${path}: ${(cause as Error).message} (vitest was interrupted or crashed before writing it)`,
  );
  process.exit(1);
}

let notRunInFailedFiles = 0;
for (const file of report.testResults) {
  if (file.status !== 'failed') continue;
  const notRun = file.assertionResults.filter((test) => test.status !== 'passed' && test.status !== 'failed');
  // A file that failed before declaring any test still counts once.
  notRunInFailedFiles += file.assertionResults.length === 0 ? 1 : notRun.length;
}
const failed = report.numFailedTests + notRunInFailedFiles;
const skipped = Math.max(0, report.numPendingTests + report.numTodoTests - notRunInFailedFiles);
console.log(`${report.numPassedTests} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
if (report.numPassedTests + failed === 0) {
  console.error('no test ran');
  process.exit(1);
}
process.exit(failed > 0 ? 1 : 0);
