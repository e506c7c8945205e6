#!/usr/bin/env bash
# run.sh [process|container|both]
#
# Runs the integration module's tests (go test -race -count=1 ./...) once per
# requested backend, with LOCKSMITH_BACKEND set, the backends at the same
# time. For the container backend it first builds the local image
# (build-image.sh) unless LOCKSMITH_REDIS_IMAGE names another image. A
# backend that cannot run fails the script: nothing is skipped. Exits
# non-zero if any run failed. Default: both.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
default_image=locksmith/redis:7-local

case "${1:-both}" in
process) backends=(process) ;;
container) backends=(container) ;;
both) backends=(process container) ;;
*)
	echo "usage: $0 [process|container|both]" >&2
	exit 2
	;;
esac

# The container image is built first; then the backends run at the same
# time, each into a log of its own that is printed once it has finished:
# much of either run waits on servers (starts, stops, timeouts), and the
# long fencing history on processes would otherwise run alone at the end.
if [[ " ${backends[*]} " == *" container "* && "${LOCKSMITH_REDIS_IMAGE:-$default_image}" == "$default_image" ]]; then
	if ! "$here/build-image.sh" "$default_image"; then
		echo "== integration (container): FAILED to build $default_image" >&2
		exit 1
	fi
fi

logs=$(mktemp -d)
trap 'rm -rf "$logs"' EXIT
# run BACKEND: the module's tests on BACKEND, into $logs/BACKEND.log, and
# their exit status into $logs/BACKEND.rc.
run() {
	local backend=$1 grants=10000 start rc=0
	# The long fencing-token history does not depend on how servers are
	# started: it runs in full on processes and shortened on containers.
	[[ "$backend" == container ]] && grants=1000
	start=$(date +%s)
	{
		echo "== integration tests, LOCKSMITH_BACKEND=$backend"
		(cd "$here" && LOCKSMITH_BACKEND="$backend" LOCKSMITH_FENCING_GRANTS="${LOCKSMITH_FENCING_GRANTS:-$grants}" \
			go test -race -count=1 -timeout 20m ./...) || rc=$?
		if [[ $rc == 0 ]]; then
			echo "== integration ($backend): ok in $(($(date +%s) - start))s"
		else
			echo "== integration ($backend): FAILED after $(($(date +%s) - start))s"
		fi
	} >"$logs/$backend.log" 2>&1
	echo "$rc" >"$logs/$backend.rc"
}

for backend in "${backends[@]}"; do
	run "$backend" &
done
wait

failed=()
for backend in "${backends[@]}"; do
	cat "$logs/$backend.log"
	[[ "$(cat "$logs/$backend.rc")" == 0 ]] || failed+=("$backend")
done

if [[ ${#failed[@]} -gt 0 ]]; then
	echo "== integration: failed on ${failed[*]}" >&2
	exit 1
fi
