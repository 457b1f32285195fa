#!/bin/sh
# Writes cmd/reach/default.pgo, the CPU profile `go build` hands the compiler
# for the reach binary (profile-guided optimization: `go build`, `go run` and
# `go test` of ./cmd/reach use it under their default -pgo=auto).
#
# The workload profiled is the load of issue 16's bars, served as users run
# it: `reach serve` (store on, a go-sdk upstream, internal/servebench) taking
# tools/call for an unannotated tool (a write: its claim made durable before
# dispatch) and for a read-only one (a read), each on protocol 2025-11-25
# (sessions) and on the sessionless 2026-07-28: first one call at a time
# (ServedLatency), then 64 clients a path (ServedThroughput). The reach child
# is a -tags pprof build made without a profile (-pgo=off), so the profile
# written does not depend on the one it replaces; a CPU profile is taken from
# its pprof endpoint in the middle of each run, and the two are merged.
#
#	scripts/pgo.sh            # or: make pgo
#
# No profile is shipped: pgo19 (docs/BENCHMARKS.md) measured a build with
# one beside a build without and found no bar of issue 16 better in every
# pair. A profile this writes is used by every later build of ./cmd/reach
# in this tree (go build's -pgo=auto, the Dockerfile's too) until removed.
#
# PGO_SECONDS (default 30) is how long each of the two profiles lasts. The
# machine should be otherwise quiet; the profile names functions, not times,
# so a busy machine changes it less than it changes a benchmark.
set -eu

cd "$(dirname "$0")/.."
GO=${GO:-go}
secs=${PGO_SECONDS:-30}
work=$(mktemp -d)
bench=
cleanup() {
	[ -z "$bench" ] || wait "$bench" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

echo "pgo: building reach (-tags pprof, -pgo=off) and the served benchmark" >&2
"$GO" build -pgo=off -tags pprof -o "$work/reach" ./cmd/reach
"$GO" test -c -o "$work/sb.test" ./internal/servebench/

paths=reach-read,reach-write,reach-read-sessionless,reach-write-sessionless

# profile NAME BENCH BENCHTIME: runs the served benchmark BENCH with
# BENCHTIME, its temporary folders (and so the reach child's reach.log)
# under $work/NAME, and takes a CPU profile of $secs seconds from the reach
# child a few seconds after it answers, into $work/NAME.pprof.
profile() {
	mkdir "$work/$1"
	(
		cd internal/servebench
		TMPDIR="$work/$1" REACH_BENCH_PPROF=1 REACH_BENCH_BINARY="$work/reach" \
			REACH_BENCH_PATHS=$paths \
			exec "$work/sb.test" -test.run '^$' -test.bench "$2" -test.benchtime "$3"
	) >"$work/$1.out" 2>&1 &
	bench=$!
	addr=
	for _ in $(seq 600); do
		log=$(find "$work/$1" -name reach.log 2>/dev/null | head -n 1)
		if [ -n "$log" ] && grep -q '^REACH_PPROF=' "$log" && curl -sf -o /dev/null "http://$(sed -n 's/^REACH_PPROF=//p' "$log" | head -n 1)/debug/pprof/"; then
			addr=$(sed -n 's/^REACH_PPROF=//p' "$log" | head -n 1)
			break
		fi
		kill -0 "$bench" 2>/dev/null || break
		sleep 0.5
	done
	if [ -z "$addr" ]; then
		echo "pgo: the reach child of $2 did not serve pprof:" >&2
		cat "$work/$1.out" >&2
		exit 1
	fi
	sleep 5 # the sessions connected and the warm-up begun
	echo "pgo: $2 ($3 a path), profiling reach for ${secs}s" >&2
	curl -sf -o "$work/$1.pprof" "http://$addr/debug/pprof/profile?seconds=$secs"
	if ! wait "$bench"; then
		bench=
		echo "pgo: $2 failed:" >&2
		cat "$work/$1.out" >&2
		exit 1
	fi
	bench=
	grep -E '^Benchmark' "$work/$1.out" >&2 || true
}

# Each run lasts longer than its profile (about 0.5 ms a call one at a time
# on two cores, a few thousand calls/s under 64 clients).
profile latency ServedLatency "$((secs * 600))x"
profile throughput ServedThroughput "$((secs / 3 + 3))x"

"$GO" tool pprof -proto "$work/latency.pprof" "$work/throughput.pprof" >"$work/merged.pprof"
mv "$work/merged.pprof" cmd/reach/default.pgo
echo "pgo: wrote cmd/reach/default.pgo ($(wc -c <cmd/reach/default.pgo) bytes)" >&2
