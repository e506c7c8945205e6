# locksmith: every target loops over the Go modules of the repository.

GO          ?= go
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2

# Every directory holding a go.mod, the root module first.
MODULES := $(shell find . -name go.mod -not -path './.git/*' -printf '%h\n' | sort)
# The version every module is released at next (RELEASING.md).
RELEASE := v0.1.0
# The modules whose packages users import: their API is in api/.
API_MODULES := $(filter-out ./bench ./cmd/locksmith ./examples ./integration ./tools,$(MODULES))
# The integration module needs real servers and runs in test-integration.
UNIT_MODULES := $(filter-out ./integration,$(MODULES))

.PHONY: all deps test test-unit test-integration chaos chaos-long lint vet staticcheck tidy proxy-check api api-check bench bench-compare demo demo-cli

all: lint test

## deps: install redis-server (Debian package) when it is missing; the
## integration suite and the benchmarks start their own servers with it
deps:
	@command -v redis-server >/dev/null 2>&1 || { \
		echo "== installing redis-server"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null; \
	}

## test: unit tests of every module, then the real-Redis integration suite
test: deps test-unit test-integration

## test-unit: go test -race in every module but integration
test-unit: deps
	@set -e; for m in $(UNIT_MODULES); do \
		echo "== go test -race $$m"; \
		(cd $$m && $(GO) test -race -count=1 ./...); \
	done

## test-integration: the integration suite on every backend this machine has
test-integration: deps
	./integration/run.sh $(or $(BACKEND),both)

## chaos: the chaos suite's short profile (about 3 minutes, fixed seed) on
## redis-server processes behind in-process toxiproxy proxies: the checkers'
## tests, a safe phase under faults and two negative controls; the report is
## printed and written to integration/chaos/results/short.json
chaos: deps
	cd integration && LOCKSMITH_BACKEND=process $(GO) test -race -count=1 -v -timeout 15m ./chaos -chaos=short -chaos.seed=1

## chaos-long: the long profile (at least 100,000 grants, 20,000 of them
## permits, and 1,000 faults in the safe phase), without the race detector
## so that the machine's CPU goes to the workload (make chaos runs the same
## code with -race); report in integration/chaos/results/long.json
chaos-long: deps
	cd integration && LOCKSMITH_BACKEND=process nice -n 10 $(GO) test -count=1 -v -timeout 90m ./chaos -chaos=long -chaos.seed=1

## lint: go vet and staticcheck in every module
lint: vet staticcheck

vet:
	@set -e; for m in $(MODULES); do \
		echo "== go vet $$m"; \
		(cd $$m && $(GO) vet ./...); \
	done

staticcheck:
	@set -e; for m in $(MODULES); do \
		echo "== staticcheck $$m"; \
		(cd $$m && $(GO) run $(STATICCHECK) ./...); \
	done

## tidy: fail if go mod tidy would change any go.mod or go.sum
tidy:
	@set -e; for m in $(MODULES); do \
		(cd $$m && $(GO) mod tidy -diff) || { echo "go mod tidy would change $$m"; exit 1; }; \
	done

## proxy-check: every module at $(RELEASE), served by a module proxy on the
## local file system made from the working tree, resolves and builds for a
## fresh consumer outside the repository with no replace line; and the
## modules require each other at $(RELEASE) (tools/proxycheck.sh)
proxy-check:
	./tools/proxycheck.sh $(RELEASE)

## api: write the exported API of every public package to api/, one file
## per package (tools/apisnap)
api:
	rm -rf api
	root=$$($(GO) list -m) && cd tools && $(GO) run ./apisnap -root $$root -out ../api $(addprefix ../,$(API_MODULES))

## api-check: fail when api/ is not what make api would write
api-check:
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	root=$$($(GO) list -m); \
	(cd tools && $(GO) run ./apisnap -root $$root -out "$$tmp" $(addprefix ../,$(API_MODULES))); \
	diff -r -u api "$$tmp" || { echo "api/ is stale: run make api and review the change"; exit 1; }

## bench: lock+unlock benchmarks of the root module (in-process nodes, or
## the servers in LOCKSMITH_BENCH_NODES=host:port,...)
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./redlock/...

## bench-compare: locksmith side by side with redsync, redislock and the raw
## Redis floor on redis-server processes it starts, on loopback, with every
## node behind a proxy adding 250us each way (BenchmarkDelayed), and with one
## node stopped, slow or refusing (BenchmarkGray); results in bench/results/.
## Only the 250us row: make bench-compare BENCH=Delayed GRAY=none
## (bench/run.sh lists the other settings)
bench-compare: deps
	./bench/run.sh

## demo: the quickstart, on five in-process nodes unless LOCKSMITH_NODES
## (redis:// or rediss:// URLs, as the locksmith command takes them) is set
demo:
	cd examples && $(GO) run ./quickstart

## demo-cli: the locksmith command on three redis-server processes it
## starts on free local ports: doctor, status and two contending runs
demo-cli: deps
	./cmd/locksmith/demo.sh
