#!/usr/bin/env bash
# run.sh: the side-by-side benchmarks of locksmith, go-redsync/redsync,
# bsm/redislock and the raw Redis floor (make bench-compare).
#
# Builds the bench module, runs every benchmark but BenchmarkGray COUNT
# times (COUNT passes over all of them, so that drift in the machine's speed
# moves every contender alike) against redis-server processes the
# benchmarks start themselves, then
# BenchmarkGray (gray failures: its calls wait on node timeouts, so it runs
# a fixed number of calls, GRAY_COUNT times), and keeps in results/:
#   <date>-<commit>.txt            the machine description and the raw output
#   <date>-<commit>.benchstat.txt  the benchstat table
#   <date>-<commit>.by-lib.txt     benchstat with one column per library and
#                                  the significance of each difference
#   <date>-<commit>.ratios.txt     the ratio table (cmd/ratios)
#   <date>-<commit>.gray.txt       the machine description and the raw
#                                  output of BenchmarkGray
#   <date>-<commit>.gray-table.txt its table of p50/p99/max and the goal
#                                  per row (cmd/ratios)
# then prints the tables and the wall time.
#
# Environment: COUNT (default 6), BENCHTIME (default 1s), BENCH (-bench
# patterns separated by spaces, each run in turn in every pass; default
# all; none skips these benchmarks), GRAY (a pattern of
# BenchmarkGray's sub-benchmarks, as stopped or /lib=redsync$, default all;
# none skips it), GRAY_BENCHTIME (default 600x: calls per scenario and
# contender) and GRAY_COUNT (default 5: the table gives medians over runs,
# as one run's p99 of 600 calls moves by half from run to run).
# BENCH=none ./run.sh runs BenchmarkGray alone, in about 3 minutes on 2
# cores. BENCH=Delayed GRAY=none ./run.sh runs only the row at a realistic
# round trip (BenchmarkDelayed: every node behind a proxy adding 250µs each
# way), in about 5 minutes with COUNT=6;
# BENCH='Delayed LockUnlock/mode=serial/nodes=1/' adds the loopback serial
# N = 1 row to it. BENCH=Semaphore GRAY=none ./run.sh runs only the
# semaphore benchmarks (BenchmarkSemaphoreUncontended and
# BenchmarkSemaphoreContended), in about 9 minutes with COUNT=5. Timings are
# reported, never asserted.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cd "$here"

count=${COUNT:-6}
benchtime=${BENCHTIME:-1s}
patterns=${BENCH:-.}
gray=${GRAY:-.}
gray_benchtime=${GRAY_BENCHTIME:-600x}
gray_count=${GRAY_COUNT:-5}
benchstat=golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da

start=$(date +%s)
command -v redis-server >/dev/null || {
	echo "bench: redis-server is not on PATH (apt-get install redis-server)" >&2
	exit 1
}

commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
# Local changes to what the benchmarks build (the bench module, and the
# non-test sources of the library and its adapters) make the commit an
# approximation.
changed=$(git -C .. status --porcelain --untracked-files=all -- . ':!bench/results' ':!integration' ':!compat' ':!examples' 2>/dev/null |
	cut -c4- | awk '/^bench\// || (/(\.go|\.lua|go\.mod|go\.sum)$/ && !/_test\.go$/)')
if [[ $commit != unknown && -n $changed ]]; then
	commit+=-dirty
fi
stamp=$(date -u +%Y%m%d-%H%M%S)
mkdir -p results
raw=results/$stamp-$commit.txt
table=results/$stamp-$commit.benchstat.txt
bylib=results/$stamp-$commit.by-lib.txt
ratios=results/$stamp-$commit.ratios.txt
grayraw=results/$stamp-$commit.gray.txt
graytable=results/$stamp-$commit.gray-table.txt

echo "== building"
go build ./...
go vet ./...

# describe prints the machine description, as configuration lines that
# benchstat keeps, for a run with benchtime $1.
describe() {
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "commit: $commit"
	echo "go-version: $(go version)"
	echo "nproc: $(nproc)"
	echo "cpu-model: $(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
	echo "redis-server: $(redis-server --version)"
	echo "benchtime: $1"
	echo "loadavg-before: $(cut -d' ' -f1-3 /proc/loadavg)"
}

if [[ $patterns != none ]]; then
	describe "$benchtime" >"$raw"
	echo "== go test -bench '$patterns' -benchtime $benchtime, $count passes (raw output in bench/$raw)"
	# Each pass runs every benchmark once, in turn, so that a machine
	# whose speed drifts during the run (shared cores) moves every
	# contender alike; -count would run each one's samples back to back.
	read -r -a bench_patterns <<<"$patterns" # split on spaces, no globbing
	bin=$(mktemp -d)
	trap 'rm -rf "$bin"' EXIT
	go test -c -o "$bin/bench.test" .
	for pass in $(seq "$count"); do
		echo "-- pass $pass of $count, load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2
		for pattern in "${bench_patterns[@]}"; do
			"$bin/bench.test" -test.run '^$' -test.bench "$pattern" -test.skip '^BenchmarkGray$' -test.benchmem -test.benchtime "$benchtime" -test.count 1 -test.timeout 60m | tee -a "$raw"
		done
	done
	echo "loadavg-after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$raw"

	go run "$benchstat" "$raw" >"$table"
	go run "$benchstat" -col /lib -row .name,/mode,/delay,/nodes,/limit,/hold,/think "$raw" >"$bylib"
	go run ./cmd/ratios "$raw" >"$ratios"

	echo
	echo "== benchstat"
	cat "$table"
	echo
	echo "== ratios"
	cat "$ratios"
	echo
fi

if [[ $gray != none ]]; then
	describe "$gray_benchtime" >"$grayraw"
	echo "== go test -bench BenchmarkGray/$gray -benchtime $gray_benchtime -count $gray_count (raw output in bench/$grayraw)"
	go test -run '^$' -bench "^BenchmarkGray\$/$gray" -benchtime "$gray_benchtime" -count "$gray_count" -timeout 30m . | tee -a "$grayraw"
	echo "loadavg-after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$grayraw"
	go run ./cmd/ratios "$grayraw" >"$graytable"

	echo
	echo "== gray failures"
	cat "$graytable"
	echo
fi
echo "== bench-compare finished in $(($(date +%s) - start))s; results in bench/results/$stamp-$commit.*"
