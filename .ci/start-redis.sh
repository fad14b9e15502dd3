#!/usr/bin/env bash
# Installs Debian's redis-server if missing, starts mcpmon's OWN redis-server
# on a free 127.0.0.1 port (AOF on, data in DIR/redis, no RDB snapshots),
# records its pid as DIR/redis.pid for stop-peers.sh, waits until it answers
# PING, and prints the export line the Go tests read. A Redis that happens to
# be running (e.g. the packaged service on :6379) is never used: apt is kept
# from starting one (policy-rc.d) and ours listens on its own port.
#
# usage: eval "$(.ci/start-redis.sh DIR)"
set -euo pipefail
dir=${1:?usage: start-redis.sh DIR}
mkdir -p "$dir/redis"
dir=$(cd "$dir" && pwd)

if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1; then
	created_policy=0
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		# 101 = "action not allowed": postinst must not start a daemon on :6379.
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
		chmod +x /usr/sbin/policy-rc.d
		created_policy=1
	fi
	{
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends redis-server
	} >"$dir/redis-install.log" 2>&1 || {
		[ "$created_policy" = 1 ] && rm -f /usr/sbin/policy-rc.d
		echo "start-redis: apt-get install redis-server failed, see $dir/redis-install.log" >&2
		tail -20 "$dir/redis-install.log" >&2
		exit 1
	}
	[ "$created_policy" = 1 ] && rm -f /usr/sbin/policy-rc.d
fi

# port_free PORT: nothing accepts connections on 127.0.0.1:PORT.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# Backgrounded with its output detached: the caller reads our stdout through
# $(...), which would otherwise wait for redis-server to exit.
# A random free port; redis-server failing to bind (a race with another
# process) is caught below and retried on another port.
for attempt in 1 2 3 4 5; do
	port=$((20000 + RANDOM % 40000))
	port_free "$port" || continue
	redis-server --bind 127.0.0.1 --port "$port" --protected-mode yes \
		--appendonly yes --dir "$dir/redis" --save '' \
		--daemonize no --logfile "$dir/redis/redis.log" </dev/null >/dev/null 2>&1 &
	pid=$!
	echo "$pid" >"$dir/redis.pid"
	for _ in $(seq 1 100); do # up to ~10s
		if redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null | grep -q PONG; then
			echo "start-redis: redis-server pid $pid on 127.0.0.1:$port, data in $dir/redis" >&2
			echo "export MCPMON_TEST_REDIS_URL=redis://127.0.0.1:$port/0"
			exit 0
		fi
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	echo "start-redis: redis-server on port $port did not answer (attempt $attempt):" >&2
	tail -5 "$dir/redis/redis.log" >&2 || true
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	rm -f "$dir/redis.pid"
done
echo "start-redis: could not start redis-server; see $dir/redis/redis.log" >&2
exit 1
