#!/usr/bin/env bash
# Soak: bench/load.sh for 5 minutes (or $1) with 200 callers, then the leak
# check: no wrong answer, the daemon's fds within +5 and its RSS within
# +64 MiB of where they were before the load. Exits 1 when it fails. Not
# run in CI.
set -euo pipefail
exec "$(dirname "$0")/load.sh" "${1:-5m}" 200 -leak-check -settle 10s
