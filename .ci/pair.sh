#!/usr/bin/env bash
# `make bench-pair A=<rev> B=<rev>`: compare the pipeline's CPU per probe of
# two builds at 10,000 endpoints the only way this kind of box can tell them
# apart: runs alternating A, B, A, B ... (RUNS pairs), each reporting the
# pipeline's CPU per probe beside the go-sdk server's CPU for the same
# probes in the same seconds (the whole run's rows, which builds of every
# age print; the steady state's CPU and pages besides). The server's figure
# is the box's gauge (its speed moves by up to two fifths between runs
# minutes apart); compare the builds by the gauge, pipeline / server, not by
# milliseconds. Each run takes about PAIR_DURATION plus a minute of set-up;
# run nothing else meanwhile.
#
#   A, B           git revisions (default: HEAD~1 and HEAD)
#   RUNS           pairs of runs (default 2)
#   PAIR_ENDPOINTS endpoints (default 10000), PAIR_SCHEDULE ('@every 60s')
#   PAIR_DURATION  run length (default 420s), PAIR_WARMUP (240s)
set -euo pipefail
cd "$(dirname "$0")/.."

a=${A:-HEAD~1}
b=${B:-HEAD}
runs=${RUNS:-2}
endpoints=${PAIR_ENDPOINTS:-10000}
schedule=${PAIR_SCHEDULE:-@every 60s}
duration=${PAIR_DURATION:-420s}
warmup=${PAIR_WARMUP:-240s}

work=$(mktemp -d)
trap 'git worktree remove --force "$work/a" >/dev/null 2>&1 || true; git worktree remove --force "$work/b" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT

build() { # name rev
	local name=$1 rev=$2
	echo "==> building mcpmon-load at $rev ($(git rev-parse --short "$rev"))" >&2
	git worktree add --detach --quiet "$work/$name" "$rev"
	(cd "$work/$name" && go build -o "$work/bin-$name" ./cmd/mcpmon-load)
}
build a "$a"
build b "$b"

# field prints the value column of the row whose name starts with $1.
field() { { grep -F "| $1" "$2" || true; } | head -1 | awk -F'|' '{gsub(/^ +| +$/, "", $3); print $3}'; }
# micros turns a Go duration's leading figure (1.304ms, 930µs, 1.2s) into µs.
micros() { awk '{v=$1; u=v; sub(/^[0-9.]+/, "", u); sub(/[^0-9.].*$/, "", v);
	m = (u ~ /^ms/) ? 1000 : (u ~ /^(µs|us)/) ? 1 : (u ~ /^s/) ? 1e6 : (u ~ /^ns/) ? 0.001 : 0; print v*m}' <<<"$1"; }

printf '| run | build | steady CPU per probe | whole run: pipeline / go-sdk server CPU per probe = the gauge | steady pages per probe |\n|---|---|---|---|---|\n' >"$work/table"
for i in $(seq 1 "$runs"); do
	for name in a b; do
		rev=$a
		[ "$name" = b ] && rev=$b
		out="$work/run-$i-$name.log"
		echo "==> run $i of $runs: build $name ($rev), $endpoints endpoints on '$schedule' for $duration ..." >&2
		"$work/bin-$name" --fleet --endpoints "$endpoints" --schedule "$schedule" --duration "$duration" --warmup "$warmup" >"$out" 2>"$out.err" || {
			echo "pair: run $i of build $name failed; its output:" >&2
			tail -20 "$out.err" >&2
			exit 1
		}
		# The gauge from the whole run's rows, which builds of every age
		# print (the steady server row is newer): the warm-up is in both.
		whole=$(field 'CPU per probe (pipeline alone' "$out")
		srv=$(field 'server CPU per probe' "$out")
		ratio=$(awk -v p="$(micros "$whole")" -v s="$(micros "$srv")" 'BEGIN { if (s > 0) printf "%.3f", p / s }')
		printf '| %s | %s (%s) | %s | %s / %s = %s | %s |\n' "$i" "$name" "$rev" \
			"$(field 'steady state: CPU per probe' "$out")" "$whole" "$srv" "$ratio" \
			"$(field 'steady state: embedded store commits and pages' "$out")" >>"$work/table"
	done
done
cat "$work/table"
