#!/usr/bin/env bash
# The README's main command: installs what is missing, then runs the local default (DESIGN.md section 15)
# in the foreground until Ctrl-C.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
setup_all
cd "$ROOT"
export PATH="$ROOT/node_modules/.bin:$PATH"
exec node src/local/cli.ts up "$@"
