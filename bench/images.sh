#!/usr/bin/env bash
# Times "unitrun pod run --detach" of an isolated pod of one app whose
# root is a registry image already pulled (its second start: the store's
# layers mounted with overlayfs) against the same app with the same files
# in a host directory as its rootfs, COUNT pairs interleaved, and prints
# each pair's times and the median ratio image/rootfs (docs/performance.md,
# Images). The registry is served in the test process.
# Usage: bench/images.sh [COUNT] (default 11)
# It boots a fresh systemd user manager for the run (see
# internal/systemdtest), so it needs root.
set -euo pipefail
cd "$(dirname "$0")/.."
exec go test ./pod/podrun/ -run '^$' -bench '^BenchmarkImagePod$' -timeout 30m -benchtime "${1:-11}x"
