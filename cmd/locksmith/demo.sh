#!/usr/bin/env bash
# make demo-cli: start three redis-server processes on free local ports,
# then show locksmith doctor, status, and two runs contending for one key.
# Everything it starts is stopped on exit.
set -euo pipefail
cd "$(dirname "$0")"
work=$(mktemp -d)
pids=()
cleanup() {
	for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

go build -o "$work/locksmith" .
ports=()
port=7701
while [ ${#ports[@]} -lt 3 ]; do
	if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then ports+=("$port"); fi
	port=$((port + 1))
done
urls=()
for port in "${ports[@]}"; do
	mkdir "$work/$port"
	redis-server --port "$port" --bind 127.0.0.1 --dir "$work/$port" --save '' \
		--appendonly yes --appendfsync always >"$work/$port/log" 2>&1 &
	pids+=($!)
	urls+=("redis://127.0.0.1:$port")
done
for port in "${ports[@]}"; do
	until grep -q "Ready to accept connections" "$work/$port/log"; do sleep 0.05; done
done

export PATH="$work:$PATH"
LOCKSMITH_NODES=$(IFS=,; echo "${urls[*]}")
export LOCKSMITH_NODES
show() {
	printf '$ %s\n' "$*"
	"$@" || printf '(exit status %d)\n' "$?"
}

echo "\$ export LOCKSMITH_NODES=$LOCKSMITH_NODES"
show locksmith doctor --clock-sample 1s
show locksmith status nightly
echo '$ locksmith run -v nightly -- sh -c "echo A: working; sleep 2; echo A: done" &'
locksmith run -v nightly -- sh -c "echo A: working; sleep 2; echo A: done" &
a=$!
sleep 0.5
echo '$ locksmith run -v --progress-every 1s nightly -- sh -c "echo B: working; sleep 1; echo B: done" &'
locksmith run -v --progress-every 1s nightly -- sh -c "echo B: working; sleep 1; echo B: done" &
b=$!
sleep 0.5
show locksmith status nightly
show locksmith run -n nightly -- echo "never printed"
echo "\$ wait"
wait "$a" "$b"
show locksmith status nightly
