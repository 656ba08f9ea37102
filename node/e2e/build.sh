#!/usr/bin/env bash
# Builds what the end-to-end test runs into a cache directory outside the
# repository (default /var/cache/unitrun-e2e, or $UNITRUN_E2E_CACHE):
#   bin/etcd            go.etcd.io/etcd/server/v3 $ETCD_VERSION
#   bin/kube-apiserver  k8s.io/kubernetes/cmd/kube-apiserver $KUBE_VERSION
#   bin/kubectl         k8s.io/kubernetes/cmd/kubectl $KUBE_VERSION, only
#                       where no kubectl is on $PATH (the test then takes
#                       this one: .ci/run puts bin/ last on $PATH)
#   bin/unitrun, bin/unitrun-hook (the pods' exit hook, beside unitrun as
#                       a release installs it, static), bin/unitrun-node
#                       from this checkout (rebuilt every time)
# Each third-party binary is built once per version, in a module of its
# own made here: k8s.io/kubernetes replaces every k8s.io/* staging module
# with ./staging/src/... and requires them at v0.0.0, which a module that
# requires it does not see, so the builder module replaces each of them
# with the same release (v0.X.Y for v1.X.Y); go get then requires those
# the API server imports (requiring all of them fails: the proxy serves no
# k8s.io/sample-cli-plugin). Builds run at nice 19 with one package at a time (GOFLAGS=-p=1)
# unless GOFLAGS is set. Prints the bin directory on its last line.
set -euo pipefail
ETCD_VERSION=${ETCD_VERSION:-v3.5.21}
KUBE_VERSION=${KUBE_VERSION:-v1.33.13}
cache=${UNITRUN_E2E_CACHE:-/var/cache/unitrun-e2e}
repo=$(cd "$(dirname "$0")/../.." && pwd)
export GOFLAGS=${GOFLAGS:--p=1}
mkdir -p "$cache/bin" "$cache/src"
bin=$cache/bin

# tool_build NAME VERSIONED-BINARY MODULE@VERSION PACKAGE [REQUIRE/REPLACE ARGS]
tool_build() {
  local name=$1 out=$2 modver=$3 pkg=$4
  shift 4
  [ -x "$out" ] && return 0
  local dir=$cache/src/$(basename "$out")
  rm -rf "$dir" && mkdir -p "$dir"
  local start=$SECONDS
  (
    cd "$dir"
    go mod init unitrun.invalid/e2e/$name >/dev/null 2>&1
    if [ $# -gt 0 ]; then go mod edit "$@"; fi
    go get -tool "$pkg@${modver#*@}" >/dev/null
    nice -n 19 go build -buildvcs=false -trimpath -o "$out.tmp" "$pkg"
  )
  mv "$out.tmp" "$out"
  echo "built $name in $((SECONDS - start)) s: $(stat -c %s "$out") bytes" >&2
}

tool_build etcd "$bin/etcd-$ETCD_VERSION" "go.etcd.io/etcd/server/v3@$ETCD_VERSION" go.etcd.io/etcd/server/v3
ln -sfn "etcd-$ETCD_VERSION" "$bin/etcd"

# The staging modules, read from k8s.io/kubernetes' own go.mod.
gomod=$(go mod download -json "k8s.io/kubernetes@$KUBE_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
staging_version=v0.${KUBE_VERSION#v1.}
pins=(-require "k8s.io/kubernetes@$KUBE_VERSION")
for m in $(sed -n 's#^[[:space:]]*\(k8s.io/[^ ]*\) => ./staging/.*#\1#p' "$gomod"); do
  pins+=(-replace "$m=$m@$staging_version")
done
tool_build kube-apiserver "$bin/kube-apiserver-$KUBE_VERSION" "k8s.io/kubernetes@$KUBE_VERSION" k8s.io/kubernetes/cmd/kube-apiserver "${pins[@]}"
ln -sfn "kube-apiserver-$KUBE_VERSION" "$bin/kube-apiserver"
if ! command -v kubectl >/dev/null; then
  tool_build kubectl "$bin/kubectl-$KUBE_VERSION" "k8s.io/kubernetes@$KUBE_VERSION" k8s.io/kubernetes/cmd/kubectl "${pins[@]}"
  ln -sfn "kubectl-$KUBE_VERSION" "$bin/kubectl"
fi

start=$SECONDS
(cd "$repo" && nice -n 19 go build -buildvcs=false -o "$bin/unitrun" ./cmd/unitrun)
(cd "$repo" && CGO_ENABLED=0 nice -n 19 go build -buildvcs=false -o "$bin/unitrun-hook" ./cmd/unitrun-hook)
(cd "$repo/node" && nice -n 19 go build -buildvcs=false -o "$bin/unitrun-node" ./cmd/unitrun-node)
echo "built unitrun, unitrun-hook and unitrun-node in $((SECONDS - start)) s" >&2
echo "$bin"
