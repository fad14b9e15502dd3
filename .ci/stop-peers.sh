#!/usr/bin/env bash
# Stop every peer a start script recorded as DIR/*.pid, then remove DIR.
set -u
dir=${1:?usage: stop-peers.sh DIR}
[ -d "$dir" ] || exit 0
for pidfile in "$dir"/*.pid; do
  [ -f "$pidfile" ] || continue
  pid=$(cat "$pidfile")
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
done
rm -rf "$dir"
