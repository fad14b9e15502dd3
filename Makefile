# The two commands a newcomer needs: `make run` and `make test`.
GO ?= go
ARGS ?=

.PHONY: run test test-large lint bench build tidy chaos fuzz

run: ## the whole pipeline in one process on embedded defaults
	$(GO) run ./cmd/mcpmon run $(ARGS)

test: ## install and start real peers (redis-server, fauxqs), then run every test
	bash .ci/test.sh

# `make test-large` runs the load-shaped tests at their documented size
# (storms of 50 endpoints, 10,000 endpoints paged through the API):
# `make test` runs the same tests at a dozen endpoints (testpeers.Size).
test-large: ## every test, with the storm and paging tests at full size
	MCPMON_TEST_FULL=1 GOTESTFLAGS='-timeout 25m' bash .ci/test.sh

build:
	$(GO) build -o bin/ ./cmd/...

lint:
	gofmt -l . | (! grep .) || (echo "gofmt needed on the files above" >&2; exit 1)
	$(GO) vet ./...

# VERSUS_ENDPOINTS sizes the side-by-side run with Gatus and blackbox_exporter
# (empty skips it in `make bench`); 1000 measures memory per endpoint past the
# fixed costs. VERSUS_ARGS passes more mcpmon-load flags.
VERSUS_ENDPOINTS ?= 50
VERSUS_ARGS ?=
bench: ## Go benchmarks and the load harness table
	VERSUS_ENDPOINTS='$(VERSUS_ENDPOINTS)' VERSUS_ARGS='$(VERSUS_ARGS)' bash .ci/bench.sh

.PHONY: bench-versus
bench-versus: ## mcpmon, Gatus and blackbox_exporter + Prometheus checking one fleet at once
	VERSUS_ENDPOINTS='$(VERSUS_ENDPOINTS)' VERSUS_ARGS='$(VERSUS_ARGS)' bash .ci/bench.sh --versus-only

# `make bench-pair A=<rev> B=<rev>` compares two builds' pipeline CPU per probe
# at 10,000 endpoints in runs alternating A, B (RUNS pairs, default 2; about
# 8 minutes a run), each beside the go-sdk server's CPU for the same probes:
# the box's gauge. .ci/pair.sh has the knobs.
.PHONY: bench-pair
bench-pair: ## two builds' CPU per probe, runs alternating, beside the box's gauge
	A='$(A)' B='$(B)' RUNS='$(RUNS)' bash .ci/pair.sh

# `make chaos` runs cmd/mcpmon-chaos at the documented size (50 endpoints × 8
# outages = 400 planned) in every mode (fleet, embedded, agent, embedded-agent, cluster); `make test` runs it at a small size.
# The harness runs its own redis-server, or its own Redis Cluster in cluster
# mode (it kills it, or one primary, mid-run); start-redis.sh installs the
# binary. Pass more flags with CHAOS_ARGS="--seed 7".
CHAOS_ARGS ?=
chaos: ## chaos test: kill replicas and Redis mid-run; every outage must page exactly once
	@d=$$(mktemp -d "$${TMPDIR:-/tmp}/mcpmon-chaos.XXXXXX"); \
	trap 'bash .ci/stop-peers.sh "$$d"' EXIT; \
	for peer in redis fauxqs; do \
	  exports=$$(bash .ci/start-$$peer.sh "$$d") || exit 1; eval "$$exports"; \
	done; \
	rc=0; \
	$(GO) run ./cmd/mcpmon-chaos --mode fleet --endpoints 50 --outages 8 $(CHAOS_ARGS) || rc=1; \
	$(GO) run ./cmd/mcpmon-chaos --mode embedded --endpoints 50 --outages 8 $(CHAOS_ARGS) || rc=1; \
	$(GO) run ./cmd/mcpmon-chaos --mode agent --endpoints 50 --outages 8 $(CHAOS_ARGS) || rc=1; \
	$(GO) run ./cmd/mcpmon-chaos --mode embedded-agent --endpoints 50 --outages 8 $(CHAOS_ARGS) || rc=1; \
	$(GO) run ./cmd/mcpmon-chaos --mode cluster --endpoints 50 --outages 8 $(CHAOS_ARGS) || rc=1; \
	exit $$rc

# `make fuzz` runs every fuzz target (Go's native fuzzing) for FUZZTIME each;
# `make test` runs only their seed corpora. FUZZ='FuzzSSE|FuzzBody' narrows it.
FUZZTIME ?= 30s
fuzz: ## coverage-guided fuzzing of every parser of hostile input, FUZZTIME each
	FUZZTIME=$(FUZZTIME) bash .ci/fuzz.sh

tidy:
	$(GO) mod tidy
