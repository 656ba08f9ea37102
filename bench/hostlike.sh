#!/usr/bin/env bash
# Times "pod run --detach" and "pod rm" of a pod of 10 apps on a manager
# that holds 300 other started units, as a host's manager does, where a
# daemon-reload rereads all of them. Usage: bench/hostlike.sh [BINARY...]
# It times the unitrun built from this tree, then each BINARY given (such
# as a build of an older commit), three rounds each, on one fresh
# embedded manager in a tmpfs directory (root), stopped at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/embedded.sh
for i in $(seq 300); do
  printf '[Service]\nType=oneshot\nRemainAfterExit=yes\nExecStart=/bin/true\n' >"$work/m/systemd/user/host$i.service"
done
systemctl --user daemon-reload
seq 300 | sed 's/.*/host&.service/' | xargs systemctl --user start
podyaml p10 10
echo "pod of 10 apps, manager with $(systemctl --user list-units --all --no-legend | wc -l) units, $(date -u +%Y-%m-%d)"
for _ in 1 2 3; do
  for b in bin/unitrun "$@"; do
    t0=$(now); "$b" pod run --detach --state-dir "$work/state" "$work/p10.yaml" >/dev/null
    t1=$(now); "$b" pod rm --force --state-dir "$work/state" p10
    t2=$(now)
    echo "$b: pod run --detach $(ms "$t0" "$t1") ms, pod rm $(ms "$t1" "$t2") ms"
  done
done
