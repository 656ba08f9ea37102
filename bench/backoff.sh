#!/usr/bin/env bash
# Measures what apps restarting in a loop cost the rest of the manager:
# the median wall time of 15 "unitrun run -q /bin/true", first alone, then
# 5 s after the start of a pod of 256 apps that run /bin/false with
# restartPolicy Always and restartBackoff.initial INITIAL (default the
# floor, pod.MinBackoff), and the restarts the pod made by then.
# Usage: bench/backoff.sh UNITRUN EMBEDDED_DIR [INITIAL]
# UNITRUN is a built unitrun; EMBEDDED_DIR the runtime directory of an
# embedded manager of the bench's own (booted if it is not running).
set -euo pipefail
bin=$1 emb=$2 initial=${3:-100ms}
u() { "$bin" --manager embedded --embedded-dir "$emb" "$@"; }
state=$(mktemp -d)
trap 'u pod rm --force --state-dir "$state" busy >/dev/null 2>&1 || true; rm -rf "$state"' EXIT
runs() {
	for _ in $(seq 15); do
		s=$(date +%s%N)
		u run -q /bin/true
		echo $((($(date +%s%N) - s) / 1000000))
	done | sort -n | sed -n 8p
}
echo "alone: $(runs) ms"
{
	echo "name: busy"
	echo "restartPolicy: Always"
	echo "restartBackoff: {initial: $initial}"
	echo "apps:"
	for i in $(seq 0 255); do echo "  - {name: a$i, exec: [/bin/false]}"; done
} >"$state/busy.yaml"
u pod create --state-dir "$state" "$state/busy.yaml" >/dev/null
# pod start returns once every app has started, which a pod whose apps
# keep failing may take long to reach: it runs in the background.
u pod start --state-dir "$state" busy >/dev/null 2>&1 &
sleep 5
echo "restarting every $initial and more: $(runs) ms"
u pod status --state-dir "$state" --json busy |
	python3 -c 'import json,sys; print("restarts by then:", sum(a["restarts"] for a in json.load(sys.stdin)["apps"]))'
