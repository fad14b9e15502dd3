#!/usr/bin/env bash
# Installs the MCP servers built with the TypeScript SDK that the prober's
# tests probe (prober/testdata/ts-sdk: @modelcontextprotocol/server-everything
# and @modelcontextprotocol/sdk, pinned by its package-lock.json, `npm ci` into
# its git-ignored node_modules) if missing, and prints the export line the Go
# tests read. The tests start the server themselves, one per test, on a free
# 127.0.0.1 port: nothing is left running here.
#
# usage: eval "$(.ci/start-tsmcp.sh DIR)"
set -euo pipefail
dir=${1:?usage: start-tsmcp.sh DIR}
mkdir -p "$dir"
app=$(cd "$(dirname "$0")/../prober/testdata/ts-sdk" && pwd)

command -v node >/dev/null 2>&1 || { echo "start-tsmcp: node is not installed (the TypeScript SDK servers need Node 18+)" >&2; exit 1; }
entry="$app/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
if [ ! -f "$entry" ]; then
	(cd "$app" && npm ci --no-audit --no-fund --loglevel=error) >"$dir/tsmcp-install.log" 2>&1 || {
		echo "start-tsmcp: npm ci in $app failed, see $dir/tsmcp-install.log" >&2
		tail -20 "$dir/tsmcp-install.log" >&2
		exit 1
	}
fi
echo "export MCPMON_TEST_TS_EVERYTHING=$entry"
