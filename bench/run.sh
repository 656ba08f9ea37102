#!/usr/bin/env bash
# Compares unitrun with systemd-run on one manager in one run and prints
# jobs/s and ratios. Usage: bench/run.sh [N]   (default N=200)
# It boots a fresh embedded manager (bench/embedded.sh), so it needs root,
# and stops it at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-200}
P=8
. bench/embedded.sh
go build -o bin/benchjobs ./bench/jobs
systemd-run --user --wait -q true # warm the session bus

rate() { # rate SECONDS -> jobs/s
  awk -v n="$N" -v s="$1" 'BEGIN { printf "%.1f", n / s }'
}
timeit() { # timeit CMD... -> seconds
  local t0 t1
  t0=$(date +%s.%N); "$@"; t1=$(date +%s.%N)
  awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.4f", b - a }'
}
par_systemd_run() { seq "$N" | xargs -P "$P" -n 1 sh -c 'systemd-run --user --wait -q true' sh; }
# The processes alternate, so that a machine whose speed drifts during the
# run slows each alike: systemd-run, unitrun run, unitrun --help, N times.
# It prints the three rates.
seq_processes() {
  local i t0 t1 t2 t3 a=0 b=0 c=0
  for i in $(seq "$N"); do
    t0=$(now); systemd-run --user --wait -q true
    t1=$(now); bin/unitrun run -q -- true
    t2=$(now); bin/unitrun --help >/dev/null
    t3=$(now)
    a=$((a + t1 - t0)) b=$((b + t2 - t1)) c=$((c + t3 - t2))
  done
  awk -v n="$N" -v a="$a" -v b="$b" -v c="$c" 'BEGIN { printf "%.1f %.1f %.1f\n", n * 1e6 / a, n * 1e6 / b, n * 1e6 / c }'
}

declare -A r
while read -r mode v; do r[$mode]=$v; done < <(bin/benchjobs -n "$N" -concurrency "$P" floor-seq lib-seq floor-par lib-par)
read -r r[systemd-run-seq] r[cli-seq] r[help-seq] < <(seq_processes)
r[systemd-run-xargs]=$(rate "$(timeit par_systemd_run)")
r[dial]=$(bin/benchjobs -n "$N" dial | cut -d' ' -f2)

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
echo "unitrun benchmark: N=$N true jobs, concurrency $P, $(nproc) cores, systemd $(systemctl --user --version | head -1 | cut -d' ' -f2), $(date -u +%Y-%m-%d)"
printf '%-40s %10s\n' "measure" "jobs/s"
printf '%-40s %10s\n' "(e) floor: go-systemd, sequential" "${r[floor-seq]}"
printf '%-40s %10s\n' "(a) library, sequential" "${r[lib-seq]}"
printf '%-40s %10s\n' "(b) systemd-run --wait, sequential" "${r[systemd-run-seq]}"
printf '%-40s %10s\n' "(e) floor: go-systemd, concurrent" "${r[floor-par]}"
printf '%-40s %10s\n' "(c) library, concurrent" "${r[lib-par]}"
printf '%-40s %10s\n' "(c) xargs -P $P systemd-run --wait" "${r[systemd-run-xargs]}"
printf '%-40s %10s\n' "(d) unitrun run -- true, processes" "${r[cli-seq]}"
echo "ratios:"
echo "  library / floor, sequential:          $(ratio "${r[lib-seq]}" "${r[floor-seq]}")"
echo "  library / floor, concurrent:          $(ratio "${r[lib-par]}" "${r[floor-par]}")"
echo "  library / systemd-run, sequential:    $(ratio "${r[lib-seq]}" "${r[systemd-run-seq]}")"
echo "  library / xargs systemd-run:          $(ratio "${r[lib-par]}" "${r[systemd-run-xargs]}")"
echo "  unitrun run / systemd-run (process):  $(ratio "${r[cli-seq]}" "${r[systemd-run-seq]}")"
ms() { awk -v r="$1" 'BEGIN { printf "%.1f", 1000 / r }'; }
echo "one process, in ms (time, not rate; target: unitrun run at most 0.85x systemd-run):"
echo "  systemd-run --user --wait -q true:    $(ms "${r[systemd-run-seq]}")"
echo "  unitrun run -q -- true:               $(ms "${r[cli-seq]}")   ratio $(ratio "${r[systemd-run-seq]}" "${r[cli-seq]}")"
echo "    of which process start (--help):    $(ms "${r[help-seq]}")"
echo "    of which connection set-up:         ${r[dial]}"
echo "    of which the job (library, seq):    $(ms "${r[lib-seq]}")"
