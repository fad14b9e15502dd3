#!/usr/bin/env bash
# `make bench`: Go benchmarks for the hot paths, the load harness table and
# mcpmon beside Gatus and blackbox_exporter (`make bench-versus` runs only that).
# Starts fauxqs (as make test does) so the SQS cost figures are real requests
# counted by the SDK middleware, all on 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/.."

peers_dir=$(mktemp -d "${TMPDIR:-/tmp}/mcpmon-bench.XXXXXX")
trap 'bash .ci/stop-peers.sh "$peers_dir" || true' EXIT

# The monitors set beside mcpmon, built from their release's module into a
# git-ignored directory, once per version. `go install MODULE@VERSION` would
# build the same thing, but it first asks the module proxy for the module's
# version list (to warn of deprecation), which this environment's proxy
# refuses; the release's own go.mod and go.sum pin every dependency either way.
GATUS_VERSION=v5.36.0
BLACKBOX_VERSION=v0.28.0
bench_tools=$PWD/.tmp/bench/bin
bench_tool() { # MODULE VERSION PACKAGE-DIR → prints the binary's path
  local mod=$1 ver=$2 pkg=$3 bin
  bin=$bench_tools/$(basename "${mod%/v[0-9]*}")-$ver
  if [ ! -x "$bin" ]; then
    echo "==> building $mod@$ver" >&2
    local src
    src=$(cd "$peers_dir" && go mod download -json "$mod@$ver" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
    [ -n "$src" ] || { echo "bench: go mod download $mod@$ver gave no directory" >&2; return 1; }
    mkdir -p "$bench_tools"
    (cd "$src" && go build -trimpath -o "$bin.tmp" "$pkg") >&2 && mv "$bin.tmp" "$bin"
  fi
  echo "$bin"
}

# versus: mcpmon beside the monitors a user would pick instead, on one fleet.
# VERSUS_ENDPOINTS= (empty) skips it in the full run; a bigger N, e.g.
# VERSUS_ENDPOINTS=1000, measures memory per endpoint past the fixed costs;
# VERSUS_ARGS passes more flags (--versus-window 2m, --cpuprofile FILE).
VERSUS_ENDPOINTS=${VERSUS_ENDPOINTS-50}
versus() {
  [ -n "$VERSUS_ENDPOINTS" ] || return 0
  echo
  echo "==> side by side: $VERSUS_ENDPOINTS go-sdk endpoints every second, \`mcpmon run\` vs Gatus $GATUS_VERSION vs blackbox_exporter $BLACKBOX_VERSION + Prometheus, all at once (goal: mcpmon's CPU per check below theirs); about 2 minutes, after a first build of the two tools that takes minutes" >&2
  local gatus blackbox
  gatus=$(bench_tool github.com/TwiN/gatus/v5 "$GATUS_VERSION" .)
  blackbox=$(bench_tool github.com/prometheus/blackbox_exporter "$BLACKBOX_VERSION" .)
  eval "$(bash .ci/start-prometheus.sh "$peers_dir")"
  # shellcheck disable=SC2086 # VERSUS_ARGS is a list of flags
  go run ./cmd/mcpmon-load --versus --endpoints "$VERSUS_ENDPOINTS" \
    --gatus "$gatus" --blackbox "$blackbox" --prometheus "$MCPMON_TEST_PROMETHEUS" ${VERSUS_ARGS:-}
}

# shards_table: verdicts decided per second by 1, 2 and 4 aggregator
# replicas (in-process daemons of the aggregator role, mcpmon-load
# --synthetic) on one Redis primary (the single node: one windows set,
# each replica's share filtered after the read) and on the 3-primary
# cluster (the sharded layout: each replica reads its own shards), one
# synthetic backlog of SHARDS_ENDPOINTS endpoints per cell. Each cell
# waits for its window to close, so the table takes 10 to 15 minutes.
# SHARDS_ENDPOINTS= (empty) skips it; SHARDS_REPLICAS="1 2" narrows it.
SHARDS_ENDPOINTS=${SHARDS_ENDPOINTS-10000}
SHARDS_REPLICAS=${SHARDS_REPLICAS-1 2 4}
shards_table() {
  [ -n "$SHARDS_ENDPOINTS" ] || return 0
  echo "==> aggregator replicas × Redis primaries: verdicts decided/s after a window of $SHARDS_ENDPOINTS endpoints closes (fauxqs; 1 primary = single Redis, 3 = the cluster's sharded layout); 10 to 15 minutes" >&2
  if [ -z "${MCPMON_TEST_REDIS_CLUSTER_URL:-}" ]; then
    eval "$(bash .ci/start-rediscluster.sh "$peers_dir")"
  fi
  local primaries n url out v
  declare -A cell
  for primaries in 1 3; do
    url=$MCPMON_TEST_REDIS_URL
    [ "$primaries" = 3 ] && url=$MCPMON_TEST_REDIS_CLUSTER_URL
    for n in $SHARDS_REPLICAS; do
      echo "==> $n aggregator replica(s), $primaries primar$([ "$primaries" = 1 ] && echo y || echo ies)" >&2
      out=$(go run ./cmd/mcpmon-load --synthetic "$SHARDS_ENDPOINTS" --endpoints "$SHARDS_ENDPOINTS" --queue sqs \
        --redis-url "$url" --aggregators "$n") || out=""
      v=$(printf '%s\n' "$out" | sed -n 's/^| verdicts applied\/s[^|]*| \([0-9][0-9]*\) .*/\1/p')
      cell[$primaries,$n]=${v:-failed}
    done
  done
  echo
  echo "| aggregator replicas | verdicts/s, 1 primary | verdicts/s, 3 primaries |"
  echo "|---|---|---|"
  for n in $SHARDS_REPLICAS; do
    echo "| $n | ${cell[1,$n]} | ${cell[3,$n]} |"
  done
}
# `bash .ci/bench.sh --shards-only`: the table alone.

echo "==> machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')" >&2
# `make bench-versus`: the side-by-side run alone.
if [ "${1:-}" = --versus-only ]; then
  versus
  exit
fi

for peer in fauxqs redis; do
  echo "==> starting $peer" >&2
  eval "$(bash ".ci/start-$peer.sh" "$peers_dir")"
done
if [ "${1:-}" = --shards-only ]; then
  shards_table
  exit
fi


echo "==> Go benchmarks" >&2
go test -run '^$' -bench . -benchmem -benchtime "${BENCHTIME:-1x}" \
  ./prober/ ./pkg/queue/... ./pkg/msg/ ./alerter/ 2>&1 | tee "$peers_dir/bench.txt" | grep -E '^(Benchmark|ok|FAIL|---)' || true

echo
echo "==> scheduler: 100k schedules, mcpmon vs robfig cron.Cron in one run (targets: CPU <= 0.1x, p99 lateness <= 10 ms); about a minute" >&2
# Always 1x: BenchmarkVsRobfig100k is a fixed-length measurement (15 s per side).
go test -run '^$' -bench . -benchmem -benchtime 1x ./pkg/scheduler/ 2>&1 \
  | grep -E '^(Benchmark|ok|FAIL|---)|^ +(\||100k )' || true

echo
echo "==> API keys: GET /v1/endpoints/{id} without and with a key, side by side (target: auth-ns/req < 5000)" >&2
go test -run '^$' -bench 'GetEndpoint|AuthOverhead' -benchmem -benchtime "${API_BENCHTIME:-20000x}" ./pkg/api/ 2>&1 \
  | grep -E '^(Benchmark|ok|FAIL|---)' || true

echo
echo "==> API body check: depth and duplicate keys in one pass vs the old recursive walk, same bodies (target: linear in size)" >&2
go test -run '^$' -bench 'BodyCheck' -benchmem -benchtime "${BODY_BENCHTIME:-20x}" ./pkg/api/ 2>&1 \
  | grep -E '^(Benchmark|ok|FAIL|---)' || true

echo
echo "==> pagination: peak heap of listing 10,000 endpoints, page by page vs one read (target: paged < 20 MB above idle)" >&2
go test -run '^$' -bench 'ListEndpoints10k' -benchtime "${PAGES_BENCHTIME:-3x}" ./pkg/api/ 2>&1 \
  | grep -E '^(Benchmark|ok|FAIL|---)' || true

echo
echo "==> rollups: bytes one endpoint's day of one-minute verdicts takes (24 hourly + 1 daily rollup), bbolt and Redis" >&2
go test -run '^$' -bench RollupBytes -benchtime 1x ./pkg/store/bolt/ ./pkg/store/redis/ 2>&1 | grep -E '^(Benchmark|ok|FAIL|---)' || true

echo
echo "==> verdicts on a full history (1,000 endpoints, a day kept): pages written per verdict, trimmed in steps beside one by one" >&2
go test -run '^$' -bench VerdictFullHistory -benchtime "${HISTORY_BENCHTIME:-5x}" ./pkg/store/bolt/ 2>&1 | grep -E '^(Benchmark|ok|FAIL|---)' || true

echo "==> embedded store's group commit beside bbolt's DB.Batch (2 ms): a lone writer, and 2,000 writes/s from 64 writers" >&2
go test -run '^$' -bench GroupCommit -benchtime "${COMMIT_BENCHTIME:-4000x}" ./pkg/store/bolt/ 2>&1 | grep -E '^(Benchmark|ok|FAIL|---)' || true

echo
echo "==> load harness: whole pipeline, embedded queue and store" >&2
go run ./cmd/mcpmon-load --endpoints 50 --duration 25s
echo
echo "==> load harness: whole pipeline on SQS (fauxqs) and Redis" >&2
go run ./cmd/mcpmon-load --endpoints 50 --duration 25s --queue sqs --redis-url "$MCPMON_TEST_REDIS_URL"
echo
echo "==> ceiling: 10,000 endpoints on @every 60s, embedded, servers in a child process, go-sdk client side by side (targets: pipeline < 50 % of a core, CPU per probe <= 0.5x the client); about 3 minutes" >&2
go run ./cmd/mcpmon-load --fleet --endpoints "${CEILING_ENDPOINTS:-10000}" --schedule '@every 60s' --duration 120s --peer 2000
echo
echo "==> alert delay after the deciding verdict: 50 of 1,000 endpoints down, alerts to a local webhook (target p99 <= 1 s)" >&2
go run ./cmd/mcpmon-load --fleet --endpoints 1000 --down 50 --schedule '@every 10s' --duration 60s
echo
echo "==> SQS cost per stage: 500 endpoints on @every 10s on fauxqs + Redis, requests per probe result by queue" >&2
go run ./cmd/mcpmon-load --fleet --endpoints 500 --schedule '@every 10s' --duration 60s --queue sqs --redis-url "$MCPMON_TEST_REDIS_URL" --peer 1000
echo
echo "==> agents: ${AGENTS:-5} in-process agents (real HTTP) × ${AGENTS_ENDPOINTS:-40} endpoints on @every ${AGENTS_EVERY:-10s} against one \`mcpmon run\` in a child process: results accepted vs expected, API CPU, 429s, no_data share (target: accepted/expected ≈ 1, no 429s); the issue's size is AGENTS=50 AGENTS_ENDPOINTS=200 AGENTS_EVERY=30s AGENTS_DURATION=3m AGENTS_WINDOW=1m" >&2
go run ./cmd/mcpmon-load --agents "${AGENTS:-5}" --endpoints-per-agent "${AGENTS_ENDPOINTS:-40}" --schedule "@every ${AGENTS_EVERY:-10s}" \
  --duration "${AGENTS_DURATION:-30s}" --mcpmon-args "--window ${AGENTS_WINDOW:-10s} --grace 2s"
echo
echo "==> store throughput: 20,000 results straight into the results queue, 2 aggregators on fauxqs + Redis (target >= 20,000 results/s)" >&2
go run ./cmd/mcpmon-load --synthetic 20000 --endpoints 10000 --queue sqs --redis-url "$MCPMON_TEST_REDIS_URL"
echo
shards_table
# IDLE_SIZES= (empty) skips the idle measurement.
IDLE_SIZES=${IDLE_SIZES-10000,100000}
if [ -n "$IDLE_SIZES" ]; then
  echo
  echo "==> idle cost: whole \`mcpmon run\` with $IDLE_SIZES endpoints registered and nothing due (targets: < 1 % of a core, <= 4 KiB RSS per endpoint); about 4 minutes" >&2
  go run ./cmd/mcpmon-load --idle "$IDLE_SIZES"
fi

echo
echo "==> status pages: badge and status JSON from the cache over loopback HTTP (target >= 20,000 req/s on 2 cores, 0 store reads/req); 1,000 public pages + overview rendered" >&2
go test -run '^$' -bench 'FromCache|Render1000' -benchtime "${STATUS_BENCHTIME:-2s}" ./pkg/status/ 2>&1 | grep -E '^(Benchmark|ok|FAIL|---)' || true

versus
