#!/bin/sh
# Before unitrun's package is removed (dpkg: "remove"; rpm: 0 copies left),
# not upgraded: stop and disable what the operator enabled, so that no
# unit runs, and no enablement link points, at a file that is gone.
set -e
case "$1" in
remove|0)
  if command -v systemctl >/dev/null 2>&1; then
    systemctl --no-reload disable --now unitrun.socket unitrun-argv.socket unitrun.service unitrun-node.service >/dev/null 2>&1 || true
  fi
  ;;
esac
