#!/usr/bin/env bash
# Times pods against a floor on one manager in one run and prints ratios:
# from "unitrun pod run --detach" to every app running, and to every exit
# recorded, for pods of 10, 100 and 256 apps (the most a pod may have),
# or the sizes that APPS lists, separated by commas, against as many
# transient units started at once with job.Command (floor), and with
# three processes per exit as the graph has (floor3), with the CPU time of
# unitrun's processes per app run against /bin/true's, that of the exit
# hook (unitrun-hook, built beside unitrun) as systemd spawns it, and the
# slope from one size to the next.
# Usage: [APPS=10,100,256] bench/pods.sh [COUNT] (default 1)
# With "isolated" after COUNT, it times instead, for pods of 1 and 10 apps,
# "pod run --detach" of an isolated pod (isolation: namespaces, a systemd
# of its own) against a host-mode pod of the same apps.
# It boots a fresh systemd user manager for the run (see
# internal/systemdtest), so it needs root.
set -euo pipefail
cd "$(dirname "$0")/.."
bench='^BenchmarkPods$'
if [ "${2:-}" = isolated ]; then bench='^BenchmarkIsolatedPods$'; fi
export UNITRUN_BENCH_APPS=${APPS:-10,100,256}
exec go test ./pod/podrun/ -run '^$' -bench "$bench" -timeout 60m -benchtime "${1:-1}x"
