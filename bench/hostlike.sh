#!/usr/bin/env bash
# Times "pod run --detach" and "pod rm" of a pod of 10 apps on a manager
# that holds 300 other started units, as a host's manager does, where a
# daemon-reload rereads all of them. Usage: bench/hostlike.sh [BINARY...]
# It times the unitrun built from this tree, then each BINARY given (such
# as a build of an older commit), three rounds each, on one fresh
# embedded manager in a tmpfs directory (root), stopped at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p bin
go build -o bin/unitrun ./cmd/unitrun
work=$(mktemp -d -p /dev/shm unitrun-bench-XXXXXX)
trap 'bin/unitrun --embedded-dir "$work/m" manager stop >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
bin/unitrun --embedded-dir "$work/m" manager start >/dev/null
eval "$(bin/unitrun --embedded-dir "$work/m" manager env)"
export UNITRUN_MANAGER="private:$work/m/systemd/private"
for i in $(seq 300); do
  printf '[Service]\nType=oneshot\nRemainAfterExit=yes\nExecStart=/bin/true\n' >"$work/m/systemd/user/host$i.service"
done
systemctl --user daemon-reload
seq 300 | sed 's/.*/host&.service/' | xargs systemctl --user start
{
  echo "name: p10"
  echo "apps:"
  for i in $(seq 0 9); do printf '  - name: a%d\n    exec: [/bin/sleep, "600"]\n' "$i"; done
} >"$work/p10.yaml"
ms() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", (b - a) / 1e6 }'; }
echo "pod of 10 apps, manager with $(systemctl --user list-units --all --no-legend | wc -l) units, $(date -u +%Y-%m-%d)"
for _ in 1 2 3; do
  for b in bin/unitrun "$@"; do
    t0=$(date +%s%N); "$b" pod run --detach --state-dir "$work/state" "$work/p10.yaml" >/dev/null
    t1=$(date +%s%N); "$b" pod rm --force --state-dir "$work/state" p10
    t2=$(date +%s%N)
    echo "$b: pod run --detach $(ms "$t0" "$t1") ms, pod rm $(ms "$t1" "$t2") ms"
  done
done
