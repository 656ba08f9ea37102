#!/usr/bin/env bash
# Times pods against a floor on one manager in one run and prints ratios:
# from "unitrun pod run --detach" to every app running, and to every exit
# recorded, for pods of 1, 10 and 100 apps, against as many transient units
# started at once with job.Command. Usage: bench/pods.sh [COUNT] (default 1)
# With "isolated" after COUNT, it times instead, for pods of 1 and 10 apps,
# "pod run --detach" of an isolated pod (isolation: namespaces, a systemd
# of its own) against a host-mode pod of the same apps.
# It boots a fresh systemd user manager for the run (see
# internal/systemdtest), so it needs root.
set -euo pipefail
cd "$(dirname "$0")/.."
bench='^BenchmarkPods$'
if [ "${2:-}" = isolated ]; then bench='^BenchmarkIsolatedPods$'; fi
exec go test ./pod/podrun/ -run '^$' -bench "$bench" -benchtime "${1:-1}x"
