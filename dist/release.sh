#!/bin/sh
# Builds unitrun's release for linux/amd64 and linux/arm64 into out/release
# of this checkout (or the -out DIR given): tarballs, .deb and .rpm
# packages and SHA256SUMS. Flags: see "go run . -h" in dist/release.
set -eu
cd "$(dirname "$0")/release"
exec go run . "$@"
