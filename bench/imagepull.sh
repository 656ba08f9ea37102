#!/usr/bin/env bash
# Times a first pull: "unitrun image pull" (download, verify, unpack into a
# fresh store) against "crane pull" (download, verify, write a tarball) of
# the same image from the same local registry (crane registry serve, in
# memory, on 127.0.0.1), in interleaved pairs whose order is drawn anew for
# each pair, and prints each pair's ratio and the median.
# Usage: [RATE=100M] bench/imagepull.sh [PAIRS] [LAYERS] [MIB_PER_LAYER]   (default 10 4 20)
# With RATE (bytes a second, K or M suffix), both pull through
# bench/throttle, which lets the registry's answers through at that rate
# (all connections together), as a registry across a network would.
# The layers are random bytes (incompressible); the stores and tarballs go
# to a temp dir on the disk the store would use (/var/tmp) and are removed
# after each pull.
set -euo pipefail
cd "$(dirname "$0")/.."
PAIRS=${1:-10}
LAYERS=${2:-4}
MIB=${3:-20}
work=$(mktemp -d -p /var/tmp unitrun-imagepull-XXXXXX)
registry=
throttle=
trap '[ -n "$registry" ] && kill "$registry" 2>/dev/null; [ -n "$throttle" ] && kill "$throttle" 2>/dev/null; rm -rf "$work"' EXIT
mkdir -p bin
go build -o bin/unitrun ./cmd/unitrun
CGO_ENABLED=0 go build -o bin/unitrun-pull ./cmd/unitrun-pull # beside unitrun, which runs it to pull
go build -o bin/throttle ./bench/throttle
GOBIN=$PWD/bin go install github.com/google/go-containerregistry/cmd/crane@v0.22.1

port=$((20000 + RANDOM % 20000))
bin/crane registry serve --address "127.0.0.1:$port" 2>/dev/null &
registry=$!
until bin/crane catalog "127.0.0.1:$port" >/dev/null 2>&1; do sleep 0.1; done
ref=127.0.0.1:$port/bench/random:1
args=()
for i in $(seq 1 "$LAYERS"); do
  mkdir -p "$work/l$i"
  head -c "${MIB}M" /dev/urandom >"$work/l$i/data$i"
  tar -C "$work/l$i" -cf "$work/l$i.tar" "data$i"
  args+=(-f "$work/l$i.tar")
done
bin/crane append "${args[@]}" -t "$ref" >/dev/null
rm -rf "$work"/l*
if [ -n "${RATE:-}" ]; then
  tport=$((port + 1))
  bin/throttle -listen "127.0.0.1:$tport" -to "http://127.0.0.1:$port" -rate "$RATE" &
  throttle=$!
  until bin/crane catalog "127.0.0.1:$tport" >/dev/null 2>&1; do sleep 0.1; done
  ref=127.0.0.1:$tport/bench/random:1
fi

# ms runs its arguments and prints the wall time in milliseconds.
ms() {
  local t0 t1
  t0=$(date +%s%N)
  "$@" >/dev/null
  t1=$(date +%s%N)
  echo $(((t1 - t0) / 1000000))
}
unitrun_pull() { bin/unitrun image pull -q --image-dir "$work/store" "$ref"; }
crane_pull() { bin/crane pull "$ref" "$work/image.tar"; }

echo "image: $LAYERS layers of $MIB MiB of random bytes; registry answers at ${RATE:-loopback speed} a second; $PAIRS interleaved pairs; $(nproc) cores; $(date -u +%Y-%m-%dT%H:%MZ)"
printf '%5s %10s %10s %7s\n' pair unitrun crane ratio
ratios=()
for i in $(seq 1 "$PAIRS"); do
  if ((RANDOM % 2)); then
    u=$(ms unitrun_pull)
    c=$(ms crane_pull)
  else
    c=$(ms crane_pull)
    u=$(ms unitrun_pull)
  fi
  rm -rf "$work/store" "$work/image.tar"
  r=$(awk -v u="$u" -v c="$c" 'BEGIN { printf "%.2f", u / c }')
  ratios+=("$r")
  printf '%5d %8dms %8dms %7s\n' "$i" "$u" "$c" "$r"
done
if [ -n "${RATE:-}" ]; then
  awk -v l="$LAYERS" -v m="$MIB" -v r="$RATE" 'BEGIN { b = r; if (r ~ /M$/) b = r * 1048576; else if (r ~ /K$/) b = r * 1024; printf "the link alone: %d ms for the %d MiB of layers\n", l * m * 1048576 / b * 1000, l * m }'
fi
printf '%s\n' "${ratios[@]}" | sort -n | awk '{ a[NR] = $1 } END { m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2; printf "median ratio unitrun/crane: %.2f\n", m }'
