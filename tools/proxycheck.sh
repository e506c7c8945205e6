#!/usr/bin/env bash
# proxycheck.sh VERSION: proves that the README's install lines work for a
# user once every module is tagged at VERSION. modproxy writes a module
# proxy on the local file system from the working tree (and checks the
# lockstep rule); then, in a temporary directory outside the repository,
# with no go.work and no replace line, fresh consumer modules `go get` the
# modules from that proxy and build and run programs that lock through them.
#
# The locksmith modules come only from the file proxy; every other module
# comes from the local module cache, else from the GOPROXY this shell had.
# cmd/locksmith is served without its replace lines, as RELEASING.md tags
# it, and installed with `go install` as the README says.
# The checksum database is off for the locksmith paths alone. A private
# GOMODCACHE keeps the shared cache free of the unreleased VERSION.
set -euo pipefail
version=${1:?usage: proxycheck.sh VERSION}
tools=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$tools/.." && pwd)
root_path=$(cd "$repo" && go list -m)

work=$(mktemp -d)
cleanup() {
	chmod -R u+w "$work" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

echo "== modproxy: the modules of $repo at $version"
(cd "$tools" && go run ./modproxy -repo "$repo" -version "$version" -out "$work/proxy" -dropreplace cmd/locksmith)

shared_cache=$(go env GOMODCACHE)
fallback=$(go env GOPROXY)
mkdir -p "$work/modcache/cache/download"
# The checksum database's cached tiles, so that verifying the other modules
# asks the network only for what this machine has not verified before.
if [ -d "$shared_cache/cache/download/sumdb" ]; then
	cp -R "$shared_cache/cache/download/sumdb" "$work/modcache/cache/download/"
fi

proxy="file://$work/proxy,file://$shared_cache/cache/download"
case "$fallback" in
off | "") ;;
*) proxy="$proxy,$fallback" ;;
esac
export GOPROXY="$proxy"
export GOMODCACHE="$work/modcache"
export GONOSUMDB="$root_path" GONOPROXY="" GOPRIVATE="" GOINSECURE=""
export GOFLAGS="-mod=mod -trimpath" GOWORK=off

# consumer MODULE PROGRAM GET...: a fresh module that runs `go get` on each
# GET in order, then builds and runs PROGRAM (a directory of testdata).
consumer() {
	local name=$1 program=$2
	shift 2
	local dir="$work/$name"
	mkdir -p "$dir"
	cp "$tools/testdata/$program"/*.go "$dir/"
	cd "$dir"
	go mod init example.com/"$name" >/dev/null 2>&1
	local mod
	for mod in "$@"; do
		echo "-- $name: go get $mod"
		go get "$mod"
	done
	if grep -q '^replace' go.mod; then
		echo "$name: go.mod has a replace line"; exit 1
	fi
	go mod tidy
	for mod in "$@"; do
		local got
		got=$(go list -m -f '{{.Version}}' "$mod")
		if [ "$got" != "$version" ]; then
			echo "$name: $mod resolved to $got, want $version"; exit 1
		fi
	done
	# A locksmith module at another version would have come from elsewhere
	# than the file proxy, which holds VERSION only.
	local stray
	stray=$(go list -m all | awk -v root="$root_path" -v v="$version" \
		'($1 == root || index($1, root "/") == 1) && $2 != v')
	if [ -n "$stray" ]; then
		echo "$name: locksmith modules not at $version:"; echo "$stray"; exit 1
	fi
	if [ -n "$(ls ./*_test.go 2>/dev/null)" ]; then
		go test -count=1 .
	fi
	go build -o "$dir/program" .
	"$dir/program"
	cd "$work"
}

# One adapter alone, first, as most users start.
consumer one consumer-one \
	"$root_path/driver/goredis"
# Everything the README and compat/MIGRATING.md tell users to `go get`.
consumer all consumer-all \
	"$root_path" \
	"$root_path/driver/goredis" \
	"$root_path/driver/redigo" \
	"$root_path/driver/rueidis" \
	"$root_path/driver/valkeygo" \
	"$root_path/compat/redislock" \
	"$root_path/compat/redsync/redis/goredis" \
	"$root_path/compat/redsync/redis/redigo" \
	"$root_path/compat/redsync/redis/rueidis" \
	"$root_path/compat/redsync/redis/valkeygo" \
	"$root_path/otel" \
	"$root_path/redlocktest"
echo "-- go install $root_path/cmd/locksmith@$version"
(cd "$work" && GOBIN="$work/bin" go install "$root_path/cmd/locksmith@$version")
"$work/bin/locksmith" --help >/dev/null
echo "locksmith command: installed and runs"
echo "== proxy check passed: every module resolves at $version from the proxy alone"
