#!/usr/bin/env bash
# Starts mcpmon's OWN Redis Cluster for the tests: 3 primaries and 3 replicas
# of Debian's redis-server (installed by start-redis.sh, which runs first) on
# free 127.0.0.1 ports, no persistence, each node's files in
# DIR/rediscluster/PORT. Every node's pid is DIR/rediscluster-PORT.pid for
# stop-peers.sh; DIR/rediscluster/nodes lists "PORT PID CONF" per node, so a
# test can kill a primary and start it again (`redis-server CONF`). Waits
# until every node reports cluster_state:ok and prints the export lines the
# Go tests read.
#
# usage: eval "$(.ci/start-rediscluster.sh DIR)"
set -euo pipefail
dir=${1:?usage: start-rediscluster.sh DIR}
mkdir -p "$dir/rediscluster"
dir=$(cd "$dir" && pwd)
base="$dir/rediscluster"

if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1; then
	# start-redis.sh installs the package; it prints its own export line, which is not ours.
	bash "$(dirname "$0")/start-redis.sh" "$dir/redis-for-cluster-install" >/dev/null
	bash "$(dirname "$0")/stop-peers.sh" "$dir/redis-for-cluster-install"
fi

# port_free PORT: nothing accepts connections on 127.0.0.1:PORT.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

fail() {
	echo "start-rediscluster: $*" >&2
	for log in "$base"/*/redis.log; do
		[ -f "$log" ] && tail -3 "$log" >&2
	done
	exit 1
}

# A node's cluster bus listens on PORT+10000, so ports are drawn below 55535,
# and no node's port may be another's bus port.
# A replica always qualifies to take over (validity factor 0): a test kills a
# primary whose replica may itself have been restarted moments before.
ports=()
taken=" "
: >"$base/nodes"

# start_node PORT: start a node there and wait (bounded) for PING; fails if
# it exits first (another process took the port since it was checked).
start_node() {
	local port=$1 node="$base/$1" pid
	mkdir -p "$node"
	cat >"$node/redis.conf" <<EOF
bind 127.0.0.1
port $port
protected-mode yes
cluster-enabled yes
cluster-config-file $node/nodes.conf
cluster-node-timeout 1000
cluster-replica-validity-factor 0
appendonly no
save ""
dir $node
daemonize no
logfile $node/redis.log
EOF
	redis-server "$node/redis.conf" </dev/null >/dev/null 2>&1 &
	pid=$!
	for _ in $(seq 1 100); do # up to ~10s
		if redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null | grep -q PONG; then
			echo "$pid" >"$dir/rediscluster-$port.pid"
			echo "$port $pid $node/redis.conf" >>"$base/nodes"
			return 0
		fi
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	return 1
}

for _ in 1 2 3 4 5 6; do
	started=0
	for _ in $(seq 1 20); do
		port=$((20000 + RANDOM % 35000))
		case "$taken" in *" $port "* | *" $((port + 10000)) "* | *" $((port - 10000)) "*) continue ;; esac
		port_free "$port" && port_free $((port + 10000)) || continue
		taken="$taken$port $((port + 10000)) "
		if start_node "$port"; then
			started=1
			ports+=("$port")
			break
		fi
	done
	[ "$started" = 1 ] || fail "could not start a node on a free port"
done

addrs=()
for port in "${ports[@]}"; do addrs+=("127.0.0.1:$port"); done
redis-cli --cluster create "${addrs[@]}" --cluster-replicas 1 --cluster-yes >"$base/create.log" 2>&1 ||
	fail "redis-cli --cluster create failed: $(tail -3 "$base/create.log")"

# Every node, not just one, must agree the slots are covered before a test
# dials whichever node it is given.
for port in "${ports[@]}"; do
	for _ in $(seq 1 200); do # up to ~20s
		redis-cli -h 127.0.0.1 -p "$port" cluster info 2>/dev/null | grep -q '^cluster_state:ok' && continue 2
		sleep 0.1
	done
	fail "node on port $port never reported cluster_state:ok"
done

seeds=$(IFS=,; echo "${addrs[*]:0:3}")
echo "start-rediscluster: 6 nodes (3 primaries, 3 replicas) on ${ports[*]}, files in $base" >&2
echo "export MCPMON_TEST_REDIS_CLUSTER_URL=redis+cluster://$seeds"
echo "export MCPMON_TEST_REDIS_CLUSTER_NODES=$base/nodes"
