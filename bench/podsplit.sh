#!/usr/bin/env bash
# Splits "pod run --detach" of pods of 10 and 100 apps (sleep) into what
# the CLI does before the start ("pod create": manifest, state, unit
# files) and the start of the unit graph, made by "pod start" and, for
# comparison, by "systemctl --user start" of the pod's target (what the
# manager takes, plus systemctl's own start, printed alone last), with
# the wall and CPU time of each starting process; then "pod run --detach"
# and "pod rm --force" themselves. Usage: bench/podsplit.sh [ROUNDS]
# (default 3), on one fresh embedded manager (root); compare with
# bench/pods.sh's floor, N transient units started at once.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/embedded.sh
# timed CMD... runs CMD and prints its wall time and its CPU time (user +
# sys, as /usr/bin/time reports it: in steps of 10 ms) in ms.
timed() {
  local t0 t1
  t0=$(now); /usr/bin/time -f '%U %S' -o "$work/time" "$@" >/dev/null; t1=$(now)
  awk -v w="$(ms "$t0" "$t1")" '{ printf "%s (CPU %.0f)", w, ($1 + $2) * 1000 }' "$work/time"
}
echo "ms, $(date -u +%Y-%m-%d)"
for n in 10 100; do
  podyaml "p$n" "$n"
  for _ in $(seq "${1:-3}"); do
    t0=$(now); bin/unitrun pod create --state-dir "$work/state" "$work/p$n.yaml" >/dev/null; t1=$(now)
    start=$(timed bin/unitrun pod start --state-dir "$work/state" "p$n")
    bin/unitrun pod rm --force --state-dir "$work/state" "p$n"
    bin/unitrun pod create --state-dir "$work/state" "$work/p$n.yaml" >/dev/null
    sysctl=$(timed systemctl --user start "unitrun-pod-p$n.target")
    bin/unitrun pod rm --force --state-dir "$work/state" "p$n"
    t2=$(now); bin/unitrun pod run --detach --state-dir "$work/state" "$work/p$n.yaml" >/dev/null
    t3=$(now); bin/unitrun pod rm --force --state-dir "$work/state" "p$n"; t4=$(now)
    echo "$n apps: create $(ms "$t0" "$t1"); pod start $start; systemctl start $sysctl; run --detach $(ms "$t2" "$t3"); rm $(ms "$t3" "$t4")"
  done
done
echo "systemctl --user show -p Version alone: $(timed systemctl --user show -p Version)"
