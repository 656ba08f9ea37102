#!/usr/bin/env bash
# Times an op's round trip through the host API daemon against the same
# command run by the library, on one manager in one run, and prints the
# ratio for each of ROUNDS runs, with the CPU time a call costs the whole
# machine (every process it involves), then status queries/s and the
# daemon's idle RSS from the last. Each round also times the library
# running the unit the daemon runs, pinned (library+pin, job.Cmd.Pin):
# daemon/lib+pin is what the daemon adds to that unit, lib+pin/library
# what the pin costs. Usage: bench/hostapi.sh [ROUNDS] [CALLS] (default 3
# rounds of 200 calls). The daemon's state dir is made under $TMPDIR
# (default /tmp): point it at another file system to measure there. The
# test harness boots the manager, so it needs root.
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
calls=${2:-200}
go test -c -o bin/hostapi.test ./hostapi/scheduler/
cd hostapi/scheduler # the test binary reads its testdata from the package's directory
printf '%5s %10s %10s %10s %7s %15s %15s   %s\n' round daemon lib+pin library ratio daemon/lib+pin lib+pin/library \
  'machine CPU per call: daemon, library, ratio'
for r in $(seq "$rounds"); do
  ../../bin/hostapi.test -test.run '^$' -test.bench 'OpRoundTrip/(daemon|library|library\+pin)$' -test.benchtime "${calls}x" |
    awk -v r="$r" '/ns\/op/ { k = $1 ~ /daemon/ ? "d" : $1 ~ /pin/ ? "p" : "l"; t[k] = $3 / 1e6; c[k] = $5 }
      END { printf "%5d %7.2f ms %7.2f ms %7.2f ms %7.2f %15.2f %15.2f   %.2f ms, %.2f ms, %.2f\n", r, t["d"], t["p"], t["l"],
        t["d"] / t["l"], t["d"] / t["p"], t["p"] / t["l"], c["d"], c["l"], c["d"] / c["l"] }'
done
../../bin/hostapi.test -test.run '^$' -test.bench 'StatusQuery|DaemonIdleRSS' -test.benchtime 100x |
  awk '/queries\/s/ { print "status queries: " $(NF-1) "/s" } /MB-rss/ { print "daemon idle RSS: " $(NF-1) " MB" }'
