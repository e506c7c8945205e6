#!/usr/bin/env bash
# run.sh: the side-by-side benchmarks of locksmith, go-redsync/redsync,
# bsm/redislock and the raw Redis floor (make bench-compare).
#
# Builds the bench module, runs every benchmark COUNT times against
# redis-server processes the benchmarks start themselves, and keeps in
# results/:
#   <date>-<commit>.txt            the machine description and the raw output
#   <date>-<commit>.benchstat.txt  the benchstat table
#   <date>-<commit>.by-lib.txt     benchstat with one column per library and
#                                  the significance of each difference
#   <date>-<commit>.ratios.txt     the ratio table (cmd/ratios)
# then prints the two tables and the wall time.
#
# Environment: COUNT (default 6), BENCHTIME (default 1s), BENCH (a -bench
# pattern, default all). Timings are reported, never asserted.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cd "$here"

count=${COUNT:-6}
benchtime=${BENCHTIME:-1s}
pattern=${BENCH:-.}
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

echo "== building"
go build ./...
go vet ./...

# The machine description, as configuration lines that benchstat keeps.
{
	echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
	echo "commit: $commit"
	echo "go-version: $(go version)"
	echo "nproc: $(nproc)"
	echo "cpu-model: $(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
	echo "redis-server: $(redis-server --version)"
	echo "benchtime: $benchtime"
	echo "loadavg-before: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$raw"

echo "== go test -bench $pattern -benchtime $benchtime -count $count (raw output in bench/$raw)"
go test -run '^$' -bench "$pattern" -benchmem -benchtime "$benchtime" -count "$count" -timeout 60m . | tee -a "$raw"
echo "loadavg-after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$raw"

go run "$benchstat" "$raw" >"$table"
go run "$benchstat" -col /lib -row .name,/mode,/nodes "$raw" >"$bylib"
go run ./cmd/ratios "$raw" >"$ratios"

echo
echo "== benchstat"
cat "$table"
echo
echo "== ratios"
cat "$ratios"
echo
echo "== bench-compare finished in $(($(date +%s) - start))s; results in bench/results/$stamp-$commit.*"
