#!/usr/bin/env bash
# Measures what a busy manager costs unitrun: on one fresh embedded
# manager, the library's job rates against the go-systemd floor and
# "pod run --detach" of a pod of 10 apps against its floor (10 units
# started at once), first with the manager empty, then again once it
# holds FILL more loaded, active units; it prints each ratio to its floor
# on both and how much of it the loaded manager keeps (1.00: unitrun
# loses no more than the manager itself does).
# Usage: bench/scale.sh [N] [FILL]   (default N=200 jobs, FILL=10000)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-200}
FILL=${2:-10000}
P=8
ROUNDS=10
. bench/embedded.sh
go build -o bin/benchjobs ./bench/jobs
podyaml p10 10

declare -A r
measure() { # measure LABEL: fills r[LABEL/mode]
  local mode v t0 t1 total=0
  while read -r mode v; do r[$1/$mode]=$v; done < <(bin/benchjobs -n "$N" -concurrency "$P" floor-seq lib-seq floor-par lib-par)
  while read -r mode v; do r[$1/$mode]=$v; done < <(bin/benchjobs -n "$ROUNDS" start10)
  for _ in $(seq "$ROUNDS"); do
    t0=$(now); bin/unitrun pod run --detach --state-dir "$work/state" "$work/p10.yaml" >/dev/null; t1=$(now)
    total=$(awk -v a="$total" -v b="$(ms "$t0" "$t1")" 'BEGIN { print a + b }')
    bin/unitrun pod rm --force --state-dir "$work/state" p10
  done
  r[$1/pod10]=$(awk -v t="$total" -v n="$ROUNDS" 'BEGIN { printf "%.1f", t / n }')
}
units() { systemctl --user list-units --all --no-legend | wc -l; }

measure empty
u0=$(units)
t0=$(now)
bin/benchjobs -n "$FILL" -concurrency 32 fill >/dev/null
t1=$(now)
u1=$(units)
measure loaded

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
echo "scale: N=$N jobs, concurrency $P, pod of 10 apps x $ROUNDS, $(nproc) cores, systemd $(systemctl --user --version | head -1 | cut -d' ' -f2), $(date -u +%Y-%m-%d)"
echo "loaded units: $u0 empty, $u1 loaded (filled $FILL in $(ms "$t0" "$t1") ms)"
printf '%-36s %10s %10s %10s\n' measure empty loaded loaded/empty
row() { printf '%-36s %10s %10s %10s\n' "$1" "${r[empty/$2]}" "${r[loaded/$2]}" "$(ratio "${r[loaded/$2]}" "${r[empty/$2]}")"; }
row "floor, sequential (jobs/s)" floor-seq
row "library, sequential (jobs/s)" lib-seq
row "floor, concurrent (jobs/s)" floor-par
row "library, concurrent (jobs/s)" lib-par
row "floor: 10 units started (ms)" start10
row "pod run --detach, 10 apps (ms)" pod10
echo "ratios to the floor on the same manager, empty -> loaded; kept: how much of its standing against the floor unitrun keeps on the loaded manager (target 1.00 within the noise; above 1, it loses less than the manager does):"
kept() { # kept LABEL UNITRUN FLOOR [time]
  local e l
  e=$(ratio "${r[empty/$2]}" "${r[empty/$3]}"); l=$(ratio "${r[loaded/$2]}" "${r[loaded/$3]}")
  if [ "${4:-}" = time ]; then k=$(ratio "$e" "$l"); else k=$(ratio "$l" "$e"); fi
  printf '  %-40s %6s -> %6s   kept %s\n' "$1" "$e" "$l" "$k"
}
kept "library / floor, sequential (rate):" lib-seq floor-seq
kept "library / floor, concurrent (rate):" lib-par floor-par
kept "pod run / floor, 10 apps (time):" pod10 start10 time
