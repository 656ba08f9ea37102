#!/usr/bin/env bash
# Puts the unitrun daemon under load and prints jobs/s, p50/p99 latency per
# front end (HTTP and SEQPACKET) and the daemon's RSS, fds and threads
# before and after. Usage: bench/load.sh [DURATION] [CALLERS] [load flags...]
# (default 10s and 200; bench/soak.sh passes 5m and -leak-check).
# It boots a fresh embedded manager in a temporary directory, so it needs
# root, and stops it and the daemon at the end.
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
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p bin
go build -o bin/unitrun ./cmd/unitrun
go build -o bin/benchload ./bench/load
bin/unitrun --embedded-dir "$work/m" manager start >/dev/null
eval "$(bin/unitrun --embedded-dir "$work/m" manager env)"
export UNITRUN_MANAGER="private:$work/m/systemd/private"
cat >"$work/daemon.toml" <<TOML
[[op]]
name = "echo"
exec = ["/bin/sh", "-c", "echo \"\$1\"", "sh"]
args = { min = 1, max = 1, pattern = "^[0-9]+\$" }

[limits]
max_live_jobs = 1024
records_keep = 1000
TOML
bin/unitrun daemon --config "$work/daemon.toml" --ops-dir "$work/ops.d" --state-dir "$work/state" \
  --socket "$work/api.sock" --seqpacket "$work/argv.sock" 2>"$work/daemon.log" &
daemon=$!
for _ in $(seq 100); do [ -S "$work/argv.sock" ] && curl -sf --unix-socket "$work/api.sock" http://unitrun/healthz >/dev/null && break; sleep 0.1; done
echo "unitrun load: $(date -u +%Y-%m-%dT%H:%MZ), systemd $(systemctl --user --version | head -1 | cut -d' ' -f2), load average $(cut -d' ' -f1-3 /proc/loadavg)"
status=0
bin/benchload -api "$work/api.sock" -argv "$work/argv.sock" -pid "$daemon" -callers "$CALLERS" -duration "$DURATION" "$@" || status=$?
echo "job records in the state dir at the end: $(find "$work/state/jobs" -mindepth 1 -maxdepth 1 ! -name '.*' | wc -l) (records_keep 1000)"
exit "$status"
