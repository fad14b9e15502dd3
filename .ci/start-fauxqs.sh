#!/usr/bin/env bash
# Installs the pinned fauxqs SQS emulator (deploy/fauxqs, `npm ci` into its
# git-ignored node_modules) if missing, starts it on a free 127.0.0.1 port via
# deploy/fauxqs/launch.mjs (fauxqs's own start command binds 0.0.0.0),
# records its pid as DIR/fauxqs.pid for stop-peers.sh, waits until it answers,
# and prints the export line the Go tests read.
#
# usage: eval "$(.ci/start-fauxqs.sh DIR)"
set -euo pipefail
dir=${1:?usage: start-fauxqs.sh DIR}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
app=$(cd "$(dirname "$0")/../deploy/fauxqs" && pwd)

command -v node >/dev/null 2>&1 || { echo "start-fauxqs: node is not installed (fauxqs 1.9.2 needs Node 20+)" >&2; exit 1; }
if [ ! -f "$app/node_modules/fauxqs/package.json" ]; then
	(cd "$app" && npm ci --no-audit --no-fund --loglevel=error) >"$dir/fauxqs-install.log" 2>&1 || {
		echo "start-fauxqs: npm ci in $app failed, see $dir/fauxqs-install.log" >&2
		tail -20 "$dir/fauxqs-install.log" >&2
		exit 1
	}
fi

log="$dir/fauxqs.log"
# Port 0: the kernel picks a free port, so there is no race with another
# process; the launcher prints the one it got. Output detached so the
# caller's $(...) does not wait for the server to exit.
FAUXQS_PORT=0 node "$app/launch.mjs" </dev/null >"$log" 2>&1 &
pid=$!
echo "$pid" >"$dir/fauxqs.pid"

port=""
for _ in $(seq 1 150); do # up to ~15s
	if ! kill -0 "$pid" 2>/dev/null; then
		echo "start-fauxqs: fauxqs exited during startup:" >&2
		cat "$log" >&2
		exit 1
	fi
	if [ -z "$port" ]; then
		port=$(sed -n 's#^fauxqs listening on http://127\.0\.0\.1:\([0-9][0-9]*\)$#\1#p' "$log" | head -n1)
	fi
	# Any HTTP answer (fauxqs says 400 to a bare GET) means it is serving.
	if [ -n "$port" ] && code=$(curl --noproxy '*' -s -o /dev/null -w '%{http_code}' --max-time 1 "http://127.0.0.1:$port/") && [ "$code" != "000" ]; then
		echo "export MCPMON_TEST_SQS_ENDPOINT=http://127.0.0.1:$port"
		exit 0
	fi
	sleep 0.1
done
echo "start-fauxqs: fauxqs did not answer on 127.0.0.1 within 15s; log:" >&2
cat "$log" >&2
kill "$pid" 2>/dev/null || true
exit 1
