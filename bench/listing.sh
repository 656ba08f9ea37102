#!/usr/bin/env bash
# Lists the jobs of a daemon that keeps 1,000 finished records, each with a
# 64 KiB output tail, from 64 callers at once, as uid 65534, which may see
# none of them, and prints the daemon's RSS before and after and its peak
# (VmHWM). Usage: bench/listing.sh [BINARY] (default: a build of the tree).
# It boots a fresh embedded manager in a temporary directory, so it needs
# root, and stops it and the daemon at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d /tmp/unitrun-listing-XXXXXX)
chmod 755 "$work"
daemon=
bin=${1:-bin/unitrun}
cleanup() {
  if [ -n "$daemon" ]; then kill -TERM "$daemon" 2>/dev/null || true; wait "$daemon" 2>/dev/null || true; fi
  "$bin" --embedded-dir "$work/m" manager stop >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
if [ $# -eq 0 ]; then mkdir -p bin; go build -o bin/unitrun ./cmd/unitrun; fi
"$bin" --embedded-dir "$work/m" manager start >/dev/null
export UNITRUN_MANAGER="private:$work/m/systemd/private"
printf '[[op]]\nname = "echo"\nexec = ["/bin/echo"]\n' >"$work/daemon.toml"
python3 - "$work/state" <<'PY'
import datetime, json, os, random, sys
jobs = os.path.join(sys.argv[1], "jobs")
os.makedirs(jobs, mode=0o700)
os.chmod(sys.argv[1], 0o700)
t0 = datetime.datetime(2026, 12, 1, tzinfo=datetime.timezone.utc)
for i in range(1000):
    t = t0 + datetime.timedelta(seconds=i)
    jid = t.strftime("%Y%m%dT%H%M%SZ") + "-%08x" % random.getrandbits(32)
    ts = t.strftime("%Y-%m-%dT%H:%M:%SZ")
    os.mkdir(os.path.join(jobs, jid), 0o700)
    rec = {"id": jid, "op": "echo", "args": [], "state": "succeeded", "unit": "unitrun-op-echo-%s.service" % jid.lower(),
           "exit_code": 0, "caller_uid": 0, "caller_pid": 1, "created_at": ts, "started_at": ts, "finished_at": ts,
           "attempts": 1, "message": "exit status 0", "output_tail": "y" * 65536}
    path = os.path.join(jobs, jid, "record.jsonl")
    with open(os.open(path, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
        f.write(json.dumps(rec) + "\n")
PY
"$bin" daemon --config "$work/daemon.toml" --ops-dir "$work/ops.d" --state-dir "$work/state" \
  --socket "$work/api.sock" --seqpacket "$work/argv.sock" --log-level error &
daemon=$!
for _ in $(seq 100); do curl -sf --unix-socket "$work/api.sock" http://unitrun/healthz >/dev/null && break; sleep 0.1; done
chmod 666 "$work/api.sock"
sleep 2
mem() { grep -E 'VmRSS|VmHWM' "/proc/$daemon/status" | tr -s ' \t\n' ' '; }
echo "before: $(mem)"
callers=()
for _ in $(seq 64); do
  setpriv --reuid 65534 --regid 65534 --clear-groups \
    curl -s --unix-socket "$work/api.sock" http://unitrun/v1/jobs -o /dev/null &
  callers+=($!)
done
wait "${callers[@]}"
echo "after 64 listings: $(mem)"
