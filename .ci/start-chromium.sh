#!/usr/bin/env bash
# Installs Debian's chromium if missing and prints the export line the
# status page browser test reads. It starts nothing: the test runs its own
# headless Chromium with a fresh profile (pkg/daemon/status_browser_test.go).
#
# usage: eval "$(.ci/start-chromium.sh DIR)"
set -euo pipefail
dir=${1:?usage: start-chromium.sh DIR}
mkdir -p "$dir"

if ! command -v chromium >/dev/null 2>&1; then
	{
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core
	} >"$dir/chromium-install.log" 2>&1 || {
		echo "start-chromium: apt-get install chromium failed, see $dir/chromium-install.log" >&2
		tail -20 "$dir/chromium-install.log" >&2
		exit 1
	}
fi

echo "export MCPMON_TEST_CHROMIUM=$(command -v chromium)"
