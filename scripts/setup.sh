#!/usr/bin/env bash
# Installs everything the project needs on this machine: Debian packages, npm packages, Go-built binaries.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
setup_all
# SECONDS: bash counts them from the start of the script; a warm setup takes seconds, a cold one about half an hour.
say "setup complete in ${SECONDS} s"
