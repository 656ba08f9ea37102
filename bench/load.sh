#!/usr/bin/env bash
# Puts the unitrun daemon under load and prints jobs/s, p50/p99 latency per
# front end (HTTP and SEQPACKET) and the daemon's RSS, fds and threads
# before and after. Usage: bench/load.sh [DURATION] [CALLERS] [load flags...]
# (default 10s and 200; bench/soak.sh passes 5m and -leak-check). With no
# load flags, no FAULT and no FOLLOW, it loads each front end alone with
# CALLERS callers, then measures the library on the same manager, and
# prints each front end's throughput as a ratio to the library's.
# It boots a fresh embedded manager in a temporary directory, so it needs
# root, and stops it and the daemon at the end.
#
# FOLLOW=N, instead of the load, has N callers follow the log of one job
# (300 lines over 3 s) and check every byte (load -follow).
#
# FAULT=kill|stop|reexec injects a fault during the load (give DURATION
# 15s or more): kill SIGKILLs the daemon 3 times, 3 s apart from 2 s in,
# and starts it again at once; stop SIGSTOPs it for 10 s from 2 s in;
# reexec sends systemctl --user daemon-reload at 2 s, then daemon-reexec
# at 5 s and 9 s (each from its own start, whenever the one before is
# answered); full puts the state dir on a 64 MiB tmpfs and fills it
# from 2 s to 7 s (calls refused meanwhile count as wrong). With a fault, HTTP calls carry idempotency keys and are
# made again until answered, SEQPACKET calls whose connection breaks are
# counted as lost, records_keep is raised so that no record is pruned, and
# once the daemon has stopped every job record is checked (load
# -check-state): none duplicated, wrong or missing.
set -euo pipefail
cd "$(dirname "$0")/.."
DURATION=${1:-10s}
CALLERS=${2:-200}
shift $(( $# < 2 ? $# : 2 ))
work=$(mktemp -d /tmp/unitrun-load-XXXXXX)
daemon=
cleanup() {
  if [ -n "$daemon" ]; then kill -TERM "$daemon" 2>/dev/null || true; wait "$daemon" 2>/dev/null || true; fi
  bin/unitrun --embedded-dir "$work/m" manager stop >/dev/null 2>&1 || true
  if mountpoint -q "$work/state"; then umount "$work/state"; fi
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p bin
go build -o bin/unitrun ./cmd/unitrun
go build -o bin/benchload ./bench/load
bin/unitrun --embedded-dir "$work/m" manager start >/dev/null
eval "$(bin/unitrun --embedded-dir "$work/m" manager env)"
export UNITRUN_MANAGER="private:$work/m/systemd/private"
FAULT=${FAULT:-}
keep=1000
[ -n "$FAULT" ] && keep=1000000
cat >"$work/daemon.toml" <<TOML
[[op]]
name = "echo"
exec = ["/bin/echo"]
args = { min = 1, max = 1, pattern = "^[0-9]+\$" }

[[op]]
name = "lines"
exec = ["/bin/sh", "-c", "i=0; while [ \$i -lt \$1 ]; do i=\$((i+1)); echo line \$i; sleep 0.01; done", "sh"]
args = { min = 1, max = 1, pattern = "^[0-9]+\$" }

[limits]
max_live_jobs = 1024
records_keep = $keep
TOML
if [ "${FAULT:-}" = full ]; then
  mkdir -m 0700 "$work/state"
  mount -t tmpfs -o size=64m,mode=0700 unitrun-load-state "$work/state"
fi
start_daemon() {
  bin/unitrun daemon --config "$work/daemon.toml" --ops-dir "$work/ops.d" --state-dir "$work/state" \
    --socket "$work/api.sock" --seqpacket "$work/argv.sock" 2>>"$work/daemon.log" &
  daemon=$!
  echo "$daemon" >"$work/daemon.pid"
}
start_daemon
for _ in $(seq 100); do [ -S "$work/argv.sock" ] && curl -sf --unix-socket "$work/api.sock" http://unitrun/healthz >/dev/null && break; sleep 0.1; done
echo "unitrun load: $(date -u +%Y-%m-%dT%H:%MZ), systemd $(systemctl --user --version | head -1 | cut -d' ' -f2), load average $(cut -d' ' -f1-3 /proc/loadavg)${FAULT:+, fault $FAULT}"
faultflags=()
[ -n "$FAULT" ] && faultflags=(-faults -answers "$work/answers")
[ -n "${FOLLOW:-}" ] && faultflags=(-follow "$FOLLOW")
status=0
if [ -z "$FAULT" ] && [ -z "${FOLLOW:-}" ] && [ $# -eq 0 ]; then
  # The comparison: CALLERS callers on each front end alone, then the
  # library on the same manager, concurrently: the same job as the op
  # (/bin/echo ARG, its output checked) with CALLERS goroutines, and
  # bench/run.sh's concurrent figure (/bin/true, 8 at a time).
  go build -o bin/benchjobs ./bench/jobs
  declare -A r
  for f in http seqpacket; do
    bin/benchload -api "$work/api.sock" -argv "$work/argv.sock" -pidfile "$work/daemon.pid" -callers "$CALLERS" -duration "$DURATION" -front "$f" | tee "$work/$f.out"
    r[$f]=$(awk -v f="$f" '$1 == f { print $4 }' "$work/$f.out")
    r[$f-p99]=$(awk -v f="$f" '$1 == f { print $6 }' "$work/$f.out")
  done
  while read -r mode v; do r[$mode]=$v; done < <(bin/benchjobs -n 2000 -concurrency "$CALLERS" lib-echo; bin/benchjobs -n 400 -concurrency 8 lib-par)
  ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
  echo "library on the same manager: ${r[lib-echo]} jobs/s running the op's job with $CALLERS goroutines, ${r[lib-par]} jobs/s running /bin/true 8 at a time (bench/run.sh's concurrent figure)"
  echo "ratios (target: each front end at 0.8 of the library or more):"
  for f in http seqpacket; do
    printf '  %-10s / library concurrent (/bin/true, 8):  %s   / library, same job, %s callers: %s   (p99 %s ms)\n' \
      "$f" "$(ratio "${r[$f]}" "${r[lib-par]}")" "$CALLERS" "$(ratio "${r[$f]}" "${r[lib-echo]}")" "${r[$f-p99]}"
  done
  exit 0
fi
bin/benchload -api "$work/api.sock" -argv "$work/argv.sock" -pidfile "$work/daemon.pid" -callers "$CALLERS" -duration "$DURATION" "${faultflags[@]}" "$@" &
load=$!
case "$FAULT" in
kill)
  sleep 2
  for n in 1 2 3; do
    kill -KILL "$daemon"; wait "$daemon" 2>/dev/null || true
    start_daemon
    echo "SIGKILL $n of the daemon at $(date -u +%T.%N | cut -c1-12), started again as pid $daemon"
    [ "$n" = 3 ] || sleep 3
  done ;;
stop)
  sleep 2; kill -STOP "$daemon"; echo "SIGSTOP at $(date -u +%T)"
  sleep 10; kill -CONT "$daemon"; echo "SIGCONT at $(date -u +%T)" ;;
reexec)
  steps=()
  for step in "2 daemon-reload" "5 daemon-reexec" "9 daemon-reexec"; do
    set -- $step
    (sleep "$1"; t=$(date -u +%T.%N | cut -c1-12); systemctl --user "$2"; echo "$2 sent at $t, answered at $(date -u +%T.%N | cut -c1-12)") &
    steps+=($!)
  done
  wait "${steps[@]}" ;;
full)
  sleep 2; dd if=/dev/zero of="$work/state/filler" bs=1M 2>/dev/null || true
  echo "state dir full at $(date -u +%T.%N | cut -c1-12) ($(df --output=avail -B1 "$work/state" | tail -1) bytes left)"
  sleep 5; rm "$work/state/filler"; echo "filler removed at $(date -u +%T.%N | cut -c1-12)" ;;
"") ;;
*) echo "load.sh: FAULT must be kill, stop, reexec or full" >&2; kill "$load"; exit 2 ;;
esac
wait "$load" || status=$?
echo "daemon log: $(wc -l <"$work/daemon.log") lines, $(grep -c 'no_space\|no space' "$work/daemon.log" || true) of them about no space"
echo "job records in the state dir at the end: $(find "$work/state/jobs" -mindepth 1 -maxdepth 1 ! -name '.*' | wc -l) (records_keep $keep)"
if [ -n "$FAULT" ]; then
  kill -TERM "$daemon"; wait "$daemon" 2>/dev/null || true; daemon=
  bin/benchload -check-state "$work/state" -answers "$work/answers" || status=1
fi
exit "$status"
