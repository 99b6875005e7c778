#!/usr/bin/env bash
# Installs everything the project needs on this machine: Debian packages, npm packages, Go-built binaries.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
setup_all
say "setup complete"
