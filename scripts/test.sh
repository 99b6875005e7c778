#!/usr/bin/env bash
# The README's test command: installs what is missing, runs every test layer (unit, integration against the
# real control plane, Redis and tofu, end to end), and ends with the plain line "N passed, N failed".
set -uo pipefail
source "$(dirname "$0")/lib.sh"
setup_all || exit 1
cd "$ROOT"
export PATH="$ROOT/node_modules/.bin:$PATH"
mkdir -p .test-results
report=.test-results/vitest.json
rm -f "$report"
say "running vitest (all projects) with $(node --version)"
vitest run --reporter=default --reporter=json --outputFile.json="$report" "$@"
status=$?
node scripts/test-summary.ts "$report" || status=1
exit $status
