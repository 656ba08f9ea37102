#!/bin/sh
# After unitrun's package is removed or upgraded: make a running systemd
# forget the unit files that are gone.
set -e
if [ -d /run/systemd/system ]; then
  systemctl daemon-reload || true
fi
