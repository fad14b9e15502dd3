#!/usr/bin/env bash
# Builds mailpit (github.com/axllent/mailpit, a real SMTP server with an HTTP
# API) into a cache outside the repo if missing — with `go install`, so
# mcpmon's go.mod never sees its dependencies — makes a throwaway CA-signed
# certificate for 127.0.0.1 with Go's own generate_cert.go, starts mailpit on
# free 127.0.0.1 ports with STARTTLS required and any SMTP credentials
# accepted, records its pid as DIR/mailpit.pid for stop-peers.sh, waits until
# its API answers, and prints the export lines the email sink test reads:
#   MCPMON_TEST_SMTP_ADDR  host:port of the SMTP listener
#   MCPMON_TEST_SMTP_API   base URL of mailpit's HTTP API
#   MCPMON_TEST_SMTP_CA    PEM file that verifies the SMTP server certificate
#
# usage: eval "$(.ci/start-smtp.sh DIR)"
set -euo pipefail
dir=${1:?usage: start-smtp.sh DIR}
mkdir -p "$dir/smtp"
dir=$(cd "$dir" && pwd)

version=v1.33.1
cache=${MCPMON_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/mcpmon/tools}/mailpit-$version
bin=$cache/mailpit
if [ ! -x "$bin" ]; then
	mkdir -p "$cache"
	echo "start-smtp: building mailpit $version into $cache (once; about a minute)" >&2
	# Outside the repo so `go install` cannot touch mcpmon's go.mod/go.sum.
	(cd / && GOTOOLCHAIN=local GOBIN="$cache" go install "github.com/axllent/mailpit@$version") \
		>"$dir/smtp/mailpit-install.log" 2>&1 || {
		echo "start-smtp: go install github.com/axllent/mailpit@$version failed, see $dir/smtp/mailpit-install.log" >&2
		tail -20 "$dir/smtp/mailpit-install.log" >&2
		exit 1
	}
fi

# A CA certificate for 127.0.0.1/localhost; the test trusts exactly it.
(cd "$dir/smtp" && GOTOOLCHAIN=local go run "$(go env GOROOT)/src/crypto/tls/generate_cert.go" \
	--host 127.0.0.1,localhost --ecdsa-curve P256 --ca --duration 48h) >"$dir/smtp/cert.log" 2>&1 || {
	echo "start-smtp: generating the test certificate failed:" >&2
	cat "$dir/smtp/cert.log" >&2
	exit 1
}

# port_free PORT: nothing accepts connections on 127.0.0.1:PORT.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

for attempt in 1 2 3 4 5; do
	smtp_port=$((20000 + RANDOM % 40000))
	http_port=$((20000 + RANDOM % 40000))
	[ "$smtp_port" != "$http_port" ] || continue
	port_free "$smtp_port" && port_free "$http_port" || continue
	"$bin" --smtp "127.0.0.1:$smtp_port" --listen "127.0.0.1:$http_port" \
		--database "$dir/smtp/mailpit.db" --max 5000 \
		--smtp-tls-cert "$dir/smtp/cert.pem" --smtp-tls-key "$dir/smtp/key.pem" \
		--smtp-require-starttls --smtp-auth-accept-any --smtp-disable-rdns \
		--disable-version-check --quiet >"$dir/smtp/mailpit.log" 2>&1 &
	pid=$!
	echo "$pid" >"$dir/mailpit.pid"
	for _ in $(seq 1 100); do # up to ~10s
		if ! port_free "$smtp_port" && ! port_free "$http_port"; then
			echo "start-smtp: mailpit pid $pid, SMTP 127.0.0.1:$smtp_port (STARTTLS required), API http://127.0.0.1:$http_port" >&2
			echo "export MCPMON_TEST_SMTP_ADDR=127.0.0.1:$smtp_port MCPMON_TEST_SMTP_API=http://127.0.0.1:$http_port MCPMON_TEST_SMTP_CA=$dir/smtp/cert.pem"
			exit 0
		fi
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	echo "start-smtp: mailpit on ports $smtp_port/$http_port did not come up (attempt $attempt):" >&2
	tail -5 "$dir/smtp/mailpit.log" >&2 || true
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	rm -f "$dir/mailpit.pid"
done
echo "start-smtp: could not start mailpit; see $dir/smtp/mailpit.log" >&2
exit 1
