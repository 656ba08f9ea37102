#!/usr/bin/env bash
# End to end against a real API server: builds etcd, kube-apiserver,
# unitrun and unitrun-node (build.sh, into $UNITRUN_E2E_CACHE, default
# /var/cache/unitrun-e2e), then runs TestEndToEnd with UNITRUN_E2E_BIN set:
# etcd and kube-apiserver on loopback ports, unitrun-node joined to it on
# an embedded systemd manager of its own, and kubectl (from $PATH) applying,
# waiting for, reading, logging and deleting Pods. Run as root, from
# anywhere; extra arguments go to go test.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=$("$here/build.sh" | tail -1)
cd "$here/.."
UNITRUN_E2E_BIN=$bin go test -count=1 -v -timeout 20m -run '^TestEndToEnd$' "$@" ./e2e/
