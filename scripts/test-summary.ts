// Prints vitest's JSON report as the plain closing line CI reads: "N passed, N failed[, N skipped]".
// Exits 1 when the report is missing or no test ran, so an empty run is never taken for a green one.
import { readFileSync } from 'node:fs';

const path = process.argv[2] ?? '.test-results/vitest.json';
let report: { numPassedTests: number; numFailedTests: number; numPendingTests: number; numTodoTests: number };
try {
  report = JSON.parse(readFileSync(path, 'utf8'));
} catch (cause) {
  console.log('0 passed, 1 failed');
  console.error(
    `read test report ${path}: ${(cause as Error).message} (vitest was interrupted or crashed before writing it)`,
  );
  process.exit(1);
}
const skipped = report.numPendingTests + report.numTodoTests;
console.log(
  `${report.numPassedTests} passed, ${report.numFailedTests} failed${skipped ? `, ${skipped} skipped` : ''}`,
);
if (report.numPassedTests + report.numFailedTests === 0) {
  console.error('no test ran');
  process.exit(1);
}
process.exit(report.numFailedTests > 0 ? 1 : 0);
