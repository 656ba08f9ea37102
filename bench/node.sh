#!/usr/bin/env bash
# The Kubernetes node's speed through kubectl, against a real API server:
# builds etcd, kube-apiserver, unitrun and unitrun-node as the end-to-end
# test does (node/e2e/build.sh, into $UNITRUN_E2E_CACHE, default
# /var/cache/unitrun-e2e), then runs its ApplyToRunning case RUNS times
# (default 1): etcd, kube-apiserver and unitrun-node on an embedded manager
# of its own, 1 Pod then 20 applied in one kubectl apply, each timed from
# the apply to every container running (kubectl's watch showing
# state.running), then deleted. For each step of a Pod's start it prints
# the median and max over the Pods from the apply: the watch's first sight
# of the Pod, the node's CreatePod beginning, the unitrun pod created
# (from the node's log), the container's unit active (its
# ActiveEnterTimestamp), unitrun's start returning, phase Running and the
# container running as the watch shows them; then the time until kubectl
# delete returns (it waits until every object is gone), of it how long
# kubectl's own client-side rate limit held its requests back (from its
# -v=3 log), and from the node's log when each deletion began,
# its unitrun pod had stopped, its object was removed and the unitrun pod
# was removed. Run as root from anywhere.
set -euo pipefail
runs=${1:-1}
repo=$(cd "$(dirname "$0")/.." && pwd)
bin=$("$repo/node/e2e/build.sh" | tail -1)
cd "$repo/node"
for ((i = 1; i <= runs; i++)); do
  echo "run $i of $runs"
  UNITRUN_E2E_BIN=$bin go test -count=1 -v -timeout 10m -run '^TestEndToEnd$/^ApplyToRunning$' ./e2e/ |
    sed -n 's/^ *\(speed\|e2e\)_test.go:[0-9]*: //p'
done
