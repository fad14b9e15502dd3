#!/usr/bin/env bash
# `make test`: install and start the real peers the tests need (redis-server
# from Debian, the fauxqs SQS emulator from npm, and any other peer script
# present), export where they listen, run every test, and stop the peers.
set -euo pipefail
cd "$(dirname "$0")/.."

peers_dir=$(mktemp -d "${TMPDIR:-/tmp}/mcpmon-peers.XXXXXX")
cleanup() { bash .ci/stop-peers.sh "$peers_dir" || true; }
trap cleanup EXIT

for peer in redis rediscluster fauxqs smtp prometheus tsmcp conformance chromium; do
  script=".ci/start-$peer.sh"
  [ -f "$script" ] || continue
  echo "==> starting test peer: $peer" >&2
  exports=$(bash "$script" "$peers_dir") || { echo "test peer $peer failed to start (see above); fix it or run $script by hand" >&2; exit 1; }
  eval "$exports"
done
export MCPMON_REQUIRE_PEERS=1

echo "==> gofmt -l ." >&2
# make lint's check, here too: CI runs only this script, and unformatted
# files landed unnoticed.
unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
  echo "$unformatted" >&2
  echo "gofmt needed on the files above: gofmt -w them" >&2
  exit 1
fi
echo "==> go vet ./..." >&2
go vet ./...
echo "==> go test ./..." >&2
# -p 4: the longest packages (pkg/daemon, the chaos harness) spend most of
# their time waiting on real windows and child processes; with the default
# -p (GOMAXPROCS, 2 here) they hold both slots and nothing else builds or
# runs meanwhile.
go test -race -count=1 -p 4 -parallel 4 -timeout 12m ${GOTESTFLAGS:-} ./...
