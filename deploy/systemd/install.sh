#!/bin/sh
# Install the hub and bridge units, their configs and their secrets (run as root, from the
# repository root, after creating the venv — docs/operations.md, "systemd"):
#   sudo deploy/systemd/install.sh            # into /
#   deploy/systemd/install.sh --root DIR      # into DIR instead (what tests/ops does)
# Modes are what DynamicUser=yes needs: the services run as a user made up at start, so they
# can read only what "others" may read — the configs (0644, they hold no secret) — while the
# env files (0600 root) are read by systemd itself before it drops privileges. Existing
# configs and env files are kept; re-running it only refreshes the units.
set -eu
ROOT=
if [ "${1:-}" = "--root" ]; then ROOT=${2:?--root needs a directory}; fi
HERE=$(cd "$(dirname "$0")" && pwd)
ETC="$ROOT/etc/bcn-bridge"
umask 077                                  # anything this script writes starts private

install -d -m 0755 "$ROOT/etc/systemd/system" "$ETC"
install -m 0644 "$HERE/bcn-hub.service" "$HERE/bcn-bridge.service" "$ROOT/etc/systemd/system/"
for config in hub.yaml bridge.yaml; do
  [ -e "$ETC/$config" ] || install -m 0644 "$HERE/$config" "$ETC/$config"
done
if [ ! -e "$ETC/hub.env" ] || [ ! -e "$ETC/bridge.env" ]; then
  token=$(python3 -c 'import secrets; print(secrets.token_hex(24))')
  for env in hub.env bridge.env; do
    if [ ! -e "$ETC/$env" ]; then
      install -m 0600 /dev/null "$ETC/$env"
      printf 'BCN_LINK_TOKEN=%s\n' "$token" >> "$ETC/$env"
    fi
  done
fi
echo "installed into ${ROOT:-/}; next: systemctl daemon-reload && systemctl enable --now bcn-hub bcn-bridge"
