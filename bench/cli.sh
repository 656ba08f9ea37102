#!/usr/bin/env bash
# Times unitrun's CLI against systemd's own tools on one fresh embedded
# manager, as interleaved pairs (one of each, N times, so that a machine
# whose speed drifts slows both alike; which goes first alternates), and
# prints for each pair the median of the N ratios with their 10th to 90th
# percentiles and the median milliseconds of each side:
#   run     unitrun --manager user run -q -- true / systemd-run --user --wait --pipe -q true
#   runrel  the same, unitrun built with CGO_ENABLED=0 -trimpath as releases are
#   runsock the same on the manager's socket (private:PATH, the bus beside
#           it for AddRef), as a root run on the system manager goes
#   proto   bench/runonly (CGO_ENABLED=0): the run over the bus with every
#           guarantee of job.Cmd, without the CLI and the packages of the
#           other commands, whose inits every unitrun process runs
#   start   unitrun start -q U             / systemctl --user start U
#   pstart  bench/runonly -unit U: the start without the CLI / the same
#   wait    unitrun wait -q W              / systemctl --user start W1
# U is a oneshot /bin/true; W a Type=exec sleep 0.05 started with
# systemctl --user start --no-block just before the timed wait, W1 the same
# sleep as a oneshot, which systemctl start waits for. The floor is
# /bin/true as a process and, in the same pairs, what one process of this
# tree costs before its first useful instruction (unitrun --help).
# Usage: bench/cli.sh [N]   (default N=100; root: it boots the manager)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-100}
. bench/embedded.sh
units=$work/m/systemd/user
CGO_ENABLED=0 go build -trimpath -o bin/unitrun-release ./cmd/unitrun # as dist/release builds it
CGO_ENABLED=0 go build -trimpath -o bin/runonly ./bench/runonly
printf '[Service]\nType=oneshot\nExecStart=/bin/true\n' >"$units/bench-true.service"
printf '[Service]\nType=exec\nExecStart=/bin/sleep 0.05\n' >"$units/bench-sleep.service"
printf '[Service]\nType=oneshot\nExecStart=/bin/sleep 0.05\n' >"$units/bench-sleep1.service"
systemctl --user daemon-reload
systemd-run --user --wait --pipe -q true # warm the session bus

a_run() { bin/unitrun --manager user run -q -- true; }
b_run() { systemd-run --user --wait --pipe -q true; }
a_runrel() { bin/unitrun-release --manager user run -q -- true; }
b_runrel() { b_run; }
a_runsock() { bin/unitrun run -q -- true; }
b_runsock() { b_run; }
a_proto() { UNITRUN_MANAGER=user bin/runonly true; }
b_proto() { b_run; }
a_start() { bin/unitrun start -q bench-true.service; }
b_start() { systemctl --user start bench-true.service; }
a_pstart() { bin/runonly -unit bench-true.service; }
b_pstart() { b_start; }
pre_wait() { systemctl --user start --no-block bench-sleep.service; }
a_wait() { bin/unitrun wait -q bench-sleep.service; }
b_wait() { systemctl --user start bench-sleep1.service; }
a_floor() { bin/unitrun --help >/dev/null; }
b_floor() { /bin/true; }

# timed SIDE NAME: the seconds SIDE_NAME takes (after pre_NAME, if
# defined, untimed).
timed() {
  local t0 t1
  if declare -F "pre_$2" >/dev/null; then "pre_$2"; fi
  t0=$EPOCHREALTIME; "$1_$2" >/dev/null; t1=$EPOCHREALTIME
  awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }'
}

# pair NAME: N pairs of a_NAME and b_NAME, which goes first alternating
# (the first of two processes in a row is slower or faster on a busy
# machine: 10% here); prints the ratios' median and spread.
pair() {
  local i ta tb out="$work/$1.pairs"
  : >"$out"
  for i in $(seq "$N"); do
    if ((i % 2)); then
      ta=$(timed a "$1"); tb=$(timed b "$1")
    else
      tb=$(timed b "$1"); ta=$(timed a "$1")
    fi
    echo "$ta $tb" >>"$out"
  done
  awk -v name="$1" '
    function median(v, n,   i, j, t) { for (i = 2; i <= n; i++) { t = v[i]; for (j = i - 1; j >= 1 && v[j] > t; j--) v[j + 1] = v[j]; v[j + 1] = t }
      return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2 }
    { n++; a[n] = $1; b[n] = $2; r[n] = $1 / $2 }
    END { ma = median(a, n); mb = median(b, n); m = median(r, n)
      printf "%-7s %6.2f  (p10 %.2f, p90 %.2f)  %7.1f ms  %7.1f ms\n", name, m, r[int(n * 0.1) + 1], r[int(n * 0.9)], ma * 1000, mb * 1000 }' "$out"
}

echo "unitrun CLI against systemd's tools: N=$N interleaved pairs, $(nproc) cores, systemd $(systemctl --user --version | head -1 | cut -d' ' -f2), $(date -u +%Y-%m-%dT%H:%MZ), load $(cut -d' ' -f1 /proc/loadavg)"
printf '%-7s %6s  %-22s  %10s  %10s\n' pair ratio "" unitrun systemd
pair run
pair runrel
pair runsock
pair proto
pair start
pair pstart
pair wait
pair floor
echo "run: target 0.80 (unitrun run -q -- true / systemd-run --user --wait --pipe -q true); start: target 0.80"
echo "floor: unitrun --help against /bin/true (the process start alone)"
