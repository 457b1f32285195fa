# make test: everything CI checks, on a fresh clone. It installs what the tests need.
GO ?= go
export PATH := $(shell $(GO) env GOROOT)/bin:$(PATH)

.PHONY: test check fmt vet unit race allocs purego bench bench-smoke fuzz loops pgo

test: check loops race allocs purego bench-smoke

# Under make test, a test whose dependencies are missing fails instead of
# skipping (REACH_CI), so that CI never passes by skipping.
test: export REACH_CI = 1

check: fmt vet

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

# The gateway's package runs real agent frameworks, MCP servers and A2A
# agents from npm: under -race on two cores it takes longer than go test's
# default 10 minutes, and cmd/reach (real processes killed and restarted, PostgreSQL
# clusters) has measured 35 minutes on a loaded machine, and past 45 with
# other builds and test runs beside it on two cores.
TESTTIMEOUT ?= 90m

unit:
	$(GO) test -timeout $(TESTTIMEOUT) ./...

race:
	$(GO) test -race -count=1 -timeout $(TESTTIMEOUT) ./...

# The allocation tests, without the race detector (which allocates on its
# own and drops sync.Pool items, so they skip themselves under -race).
allocs:
	$(GO) test -count=1 -timeout $(TESTTIMEOUT) -run 'Alloc' ./...

# The loop benchmark on both public sets, when the shared folder is beside
# the clone: no false kill, and a detection of at least 0.95 on the first
# set (traces/) and 0.85 on the second (traces-v2/, harder kinds).
LOOPSETS ?= traces:0.95 traces-v2:0.85
loops:
	@for s in $(LOOPSETS); do \
		dir=../shared/loopbench/$${s%%:*}; min=$${s##*:}; \
		if [ -d $$dir ]; then \
			echo "loops: $$dir (detection >= $$min, no false kill)"; \
			$(GO) run ./cmd/reach bench loops --strict --min-detection $$min $$dir || exit 1; \
		else echo "loops: $$dir not found, skipped"; fi; \
	done

# The store on the pure-Go SQLite (modernc.org/sqlite), which a build
# without cgo links: the race step above runs it on the C library.
purego:
	CGO_ENABLED=0 $(GO) test -count=1 -timeout $(TESTTIMEOUT) ./internal/store/sqlite/ ./internal/audit/ ./internal/durable/

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# cmd/reach/default.pgo, the profile go build (and go run, go test of
# ./cmd/reach) hands the compiler for the reach binary: CPU profiles of
# `reach serve` under the served benchmark's reads and writes, one at a
# time and 64 clients (scripts/pgo.sh says which). None is shipped: it moved
# no bar in every pair (docs/BENCHMARKS.md pgo19).
pgo:
	GO=$(GO) scripts/pgo.sh

# Every benchmark once, so that a broken one fails the test run (the
# figures come from `make bench` and the commands in docs/BENCHMARKS.md).
bench-smoke:
	$(GO) test -run '^$$' -bench . -benchtime 1x ./...

# Every fuzzer for FUZZTIME each (a developer's target; CI runs their seeds
# as tests).
FUZZTIME ?= 30s
fuzz:
	@for pkg in $$($(GO) list ./...); do \
		fs=$$($(GO) test -list '^Fuzz' $$pkg) || exit 1; \
		for f in $$(echo "$$fs" | grep '^Fuzz'); do \
			echo "fuzz $$pkg $$f"; \
			$(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
		done; \
	done

# The gateway's npm interoperability tests (internal/gateway TestNPM*) run
# real MCP servers, the TypeScript SDK client and the MCP Inspector from npm;
# install them (into .cache/npm) before the tests. Without node and npm the
# script says so and the tests skip.
.PHONY: npm-deps
npm-deps:
	@bash scripts/npm-deps.sh
unit: npm-deps
race: npm-deps

# The gateway's A2A agent tests (internal/gateway TestA2AAgents*) run a
# planner, an executor and a verifier written with the A2A JS SDK; install
# the SDKs (into .cache/a2a) before the tests. Without node and npm the
# script says so and the tests skip (and fail under make test, where REACH_CI
# is set).
.PHONY: a2a-deps
a2a-deps:
	@bash scripts/a2a-deps.sh
unit: a2a-deps
race: a2a-deps

# The gateway's agent framework tests (internal/gateway TestFrameworks*)
# run OpenAI Agents, LangGraph, the AI SDK, Mastra and Genkit from npm against reach; install
# them and the Node 22 they need (into .cache/frameworks) before the tests.
# Without node and npm the script says so and the tests skip (and fail under
# make test, where REACH_CI is set).
.PHONY: frameworks-deps
frameworks-deps:
	@bash scripts/frameworks-deps.sh
unit: frameworks-deps
race: frameworks-deps

# The web UI's browser test (internal/ui TestBrowser) drives Debian's
# chromium with playwright-core; install them before the tests.
.PHONY: browser-deps
browser-deps:
	@bash scripts/browser-deps.sh
unit: browser-deps
race: browser-deps

# The gateway's MCP conformance test (internal/gateway TestConformance) runs
# the official conformance suite, which needs Node 22; install both (into
# .cache/conformance) before the tests. Without npm the test skips.
.PHONY: conformance-deps
conformance-deps:
	@bash scripts/conformance-deps.sh
race: conformance-deps

# The PostgreSQL tests (internal/pgtest and the store's PostgreSQL suite)
# start throwaway clusters with initdb and pg_ctl; install them first.
.PHONY: pg-deps
pg-deps:
	@bash scripts/pg-deps.sh
unit: pg-deps
race: pg-deps
