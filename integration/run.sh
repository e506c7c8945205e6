#!/usr/bin/env bash
# run.sh [process|container|both]
#
# Runs the integration module's tests (go test -race -count=1 ./...) once per
# requested backend, with LOCKSMITH_BACKEND set. For the container backend it
# first builds the local image (build-image.sh) unless LOCKSMITH_REDIS_IMAGE
# names another image. A backend that cannot run fails the script: nothing is
# skipped. Exits non-zero if any run failed. Default: both.
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

failed=()
for backend in "${backends[@]}"; do
	start=$(date +%s)
	if [[ "$backend" == container && "${LOCKSMITH_REDIS_IMAGE:-$default_image}" == "$default_image" ]]; then
		if ! "$here/build-image.sh" "$default_image"; then
			echo "== integration ($backend): FAILED to build $default_image" >&2
			failed+=("$backend")
			continue
		fi
	fi
	# The long fencing-token history does not depend on how servers are
	# started: it runs in full on processes and shortened on containers.
	grants=10000
	[[ "$backend" == container ]] && grants=1000
	echo "== integration tests, LOCKSMITH_BACKEND=$backend"
	if (cd "$here" && LOCKSMITH_BACKEND="$backend" LOCKSMITH_FENCING_GRANTS="${LOCKSMITH_FENCING_GRANTS:-$grants}" \
		go test -race -count=1 -timeout 20m ./...); then
		echo "== integration ($backend): ok in $(($(date +%s) - start))s"
	else
		echo "== integration ($backend): FAILED after $(($(date +%s) - start))s" >&2
		failed+=("$backend")
	fi
done

if [[ ${#failed[@]} -gt 0 ]]; then
	echo "== integration: failed on ${failed[*]}" >&2
	exit 1
fi
