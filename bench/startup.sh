#!/usr/bin/env bash
# Times what one unitrun process costs, since systemd starts one per pod
# app exit (pod reap-app): median wall time, CPU time and page faults per run of
# "unitrun --help" and of "unitrun pod reap-app" on a pod of 100 apps,
# for the default build and a CGO_ENABLED=0 build, beside an empty Go
# program and /bin/true. Usage: bench/startup.sh [N]   (default N=200)
# The pod is created on a fresh embedded manager in a temporary directory,
# so it needs root; the manager is stopped at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-200}
# On a tmpfs, as /run is on a systemd host (pod state and the manager's units).
work=$(mktemp -d -p /dev/shm unitrun-bench-XXXXXX)
trap 'bin/unitrun --embedded-dir "$work/m" manager stop >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
mkdir -p bin "$work/empty"
go build -o bin/unitrun ./cmd/unitrun
CGO_ENABLED=0 go build -o bin/unitrun-nocgo ./cmd/unitrun
go build -o bin/benchstartup ./bench/startup
printf 'package main\n\nfunc main() {}\n' >"$work/empty/main.go"
(cd "$work/empty" && go mod init empty >/dev/null 2>&1 && go build -o "$work/empty/empty" .)
{
  echo "name: startup"
  echo "apps:"
  for i in $(seq 0 99); do printf '  - name: a%d\n    exec: [/bin/true]\n' "$i"; done
} >"$work/pod.yaml"
bin/unitrun --embedded-dir "$work/m" --manager embedded pod create --state-dir "$work/state" "$work/pod.yaml" >/dev/null
reap=(pod reap-app --state-dir "$work/state" --manager embedded --embedded-dir "$work/m" startup a0)
exit=(-env SERVICE_RESULT=success -env EXIT_CODE=exited -env EXIT_STATUS=0)

echo "one process, N=$N runs each, $(nproc) cores, $(date -u +%Y-%m-%d); binary $(du -h bin/unitrun | cut -f1), CGO_ENABLED=0 $(du -h bin/unitrun-nocgo | cut -f1)"
printf '%-28s %10s %10s %10s %10s %8s\n' command wall cpu user sys faults
b=bin/benchstartup
$b -n "$N" /bin/true /bin/true
$b -n "$N" "empty Go program" "$work/empty/empty"
$b -n "$N" "unitrun --help" bin/unitrun --help
$b -n "$N" "unitrun --help, no cgo" bin/unitrun-nocgo --help
$b -n "$N" "${exit[@]}" "pod reap-app" bin/unitrun "${reap[@]}"
$b -n "$N" "${exit[@]}" "pod reap-app, no cgo" bin/unitrun-nocgo "${reap[@]}"
