#!/usr/bin/env bash
# Installs Debian's prometheus package (prometheus + promtool) if missing and
# prints the export lines the Go tests read. It starts nothing: the tests run
# their own Prometheus on a free 127.0.0.1 port, so a packaged service that
# apt may try to start is kept from starting (policy-rc.d) and never used.
#
# usage: eval "$(.ci/start-prometheus.sh DIR)"
set -euo pipefail
dir=${1:?usage: start-prometheus.sh DIR}
mkdir -p "$dir"

if ! command -v promtool >/dev/null 2>&1 || ! command -v prometheus >/dev/null 2>&1; then
	created_policy=0
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		# 101 = "action not allowed": postinst must not start a daemon on :9090.
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
		chmod +x /usr/sbin/policy-rc.d
		created_policy=1
	fi
	{
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus
	} >"$dir/prometheus-install.log" 2>&1 || {
		[ "$created_policy" = 1 ] && rm -f /usr/sbin/policy-rc.d
		echo "start-prometheus: apt-get install prometheus failed, see $dir/prometheus-install.log" >&2
		tail -20 "$dir/prometheus-install.log" >&2
		exit 1
	}
	[ "$created_policy" = 1 ] && rm -f /usr/sbin/policy-rc.d
fi

echo "export MCPMON_TEST_PROMTOOL=$(command -v promtool) MCPMON_TEST_PROMETHEUS=$(command -v prometheus)"
