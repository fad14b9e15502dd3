#!/usr/bin/env bash
# Installs the MCP conformance suite (@modelcontextprotocol/conformance) and
# the Node 22 it needs (npm's `node` package: this machine's node is older),
# pinned by pkg/cli/testdata/conformance/package-lock.json, `npm ci` into its
# git-ignored node_modules, if missing; prints the export lines the Go tests
# read. The tests run the suite themselves: its client scenarios with
# `mcpmon probe` as the client (pkg/cli), its server scenarios against the
# prober's fixtures (prober, the agreement test). Nothing is left running
# here.
#
# usage: eval "$(.ci/start-conformance.sh DIR)"
set -euo pipefail
dir=${1:?usage: start-conformance.sh DIR}
mkdir -p "$dir"
app=$(cd "$(dirname "$0")/../pkg/cli/testdata/conformance" && pwd)

command -v npm >/dev/null 2>&1 || { echo "start-conformance: npm is not installed (apt-get install nodejs npm)" >&2; exit 1; }
entry="$app/node_modules/@modelcontextprotocol/conformance/dist/index.js"
node22="$app/node_modules/.bin/node"
if [ ! -f "$entry" ] || ! "$node22" --version >/dev/null 2>&1; then
	echo "start-conformance: npm ci in $app (Node 22 and the conformance suite; about a minute, once)" >&2
	(cd "$app" && npm ci --no-audit --no-fund --loglevel=error) >"$dir/conformance-install.log" 2>&1 || {
		echo "start-conformance: npm ci in $app failed, see $dir/conformance-install.log" >&2
		tail -20 "$dir/conformance-install.log" >&2
		exit 1
	}
fi
echo "export MCPMON_TEST_CONFORMANCE=$entry"
echo "export MCPMON_TEST_NODE22=$node22"
