#!/usr/bin/env bash
# build-image.sh [TAG]
#
# Builds a local Docker image (default tag locksmith/redis:7-local) FROM scratch
# that holds this host's redis-server, every shared library ldd lists for it and
# the dynamic loader. No registry is contacted, so it works where images cannot
# be pulled. The image carries a fingerprint of the files it was built from; when
# an image with the same fingerprint already exists nothing is rebuilt.
#
# Environment:
#   REDIS_SERVER  path of the redis-server to package (default: the one on PATH)
set -euo pipefail

tag=${1:-locksmith/redis:7-local}
label=org.locksmith.redis-image.fingerprint

die() { echo "build-image.sh: $*" >&2; exit 1; }

named=${REDIS_SERVER:-$(command -v redis-server || true)}
[[ -n "$named" && -e "$named" ]] ||
	die "redis-server not found; install it first (apt-get install -y redis-server)"
# Debian ships redis-server as a symlink to redis-check-rdb; Redis picks its mode
# from argv[0], so the real file is copied under the name redis-server.
server=$(readlink -f "$named")
[[ -x "$server" ]] || die "$server is not executable"

command -v docker >/dev/null || die "docker CLI not found"
docker info >/dev/null 2>&1 || die "docker daemon does not respond (is it running? try: docker info)"

# Every path ldd resolves: "libx.so => /path (0x..)" and the loader "/lib64/ld-linux-x86-64.so.2 (0x..)".
ldd_out=$(ldd "$server") || die "ldd $server failed"
if grep -q 'not found' <<<"$ldd_out"; then
	die "ldd reports missing libraries for $server:"$'\n'"$ldd_out"
fi
mapfile -t libs < <(awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' <<<"$ldd_out" | sort -u)
[[ ${#libs[@]} -gt 0 ]] || die "ldd listed no libraries for $server; is it statically linked?"

dockerfile='FROM scratch
COPY rootfs/ /
ENV PATH=/usr/bin
WORKDIR /data
EXPOSE 6379
ENTRYPOINT ["/usr/bin/redis-server"]
'

fingerprint=$(
	{
		printf '%s' "$dockerfile"
		sha256sum "$server" | cut -d' ' -f1
		for lib in "${libs[@]}"; do
			printf '%s ' "$lib"
			sha256sum "$(readlink -f "$lib")" | cut -d' ' -f1
		done
	} | sha256sum | cut -d' ' -f1
)

current=$(docker image inspect -f "{{ index .Config.Labels \"$label\" }}" "$tag" 2>/dev/null || true)
if [[ "$current" == "$fingerprint" ]]; then
	echo "build-image.sh: $tag is up to date"
	exit 0
fi

ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
mkdir -p "$ctx/rootfs/usr/bin"
cp -L "$server" "$ctx/rootfs/usr/bin/redis-server"
lib_dirs=()
for lib in "${libs[@]}"; do
	# Each library goes where ldd found it; the loader goes to the path the
	# binary's PT_INTERP names (ldd prints it first-hand).
	mkdir -p "$ctx/rootfs$(dirname "$lib")"
	cp -L "$lib" "$ctx/rootfs$lib"
	lib_dirs+=("$(dirname "$lib")")
done
# Without /etc/ld.so.cache the loader only searches its built-in directories;
# naming the directories keeps this independent of how the loader was built.
ld_path=$(printf '%s\n' "${lib_dirs[@]}" | sort -u | paste -sd: -)
printf '%sENV LD_LIBRARY_PATH=%s\n' "$dockerfile" "$ld_path" >"$ctx/Dockerfile"

echo "build-image.sh: building $tag from $named ($("$named" --version))"
# The classic builder needs nothing but the engine (no buildx plugin, no
# BuildKit frontend image); its deprecation notice is only shown on failure.
if ! build_log=$(DOCKER_BUILDKIT=0 docker build --label "$label=$fingerprint" -t "$tag" "$ctx" 2>&1); then
	die "docker build failed:"$'\n'"$build_log"
fi

# Prove the image runs before anyone relies on it.
out=$(docker run --rm "$tag" --version 2>&1) || die "the built image does not run: $out"
echo "build-image.sh: built $tag: $out"
