# The two commands a newcomer needs: `make run` and `make test`.
GO ?= go
ARGS ?=

.PHONY: run test lint bench build tidy

run: ## the whole pipeline in one process on embedded defaults
	$(GO) run ./cmd/mcpmon run $(ARGS)

test: ## install and start real peers (redis-server, fauxqs), then run every test
	bash .ci/test.sh

build:
	$(GO) build -o bin/ ./cmd/...

lint:
	gofmt -l . | (! grep .) || (echo "gofmt needed on the files above" >&2; exit 1)
	$(GO) vet ./...

bench: ## Go benchmarks and the load harness table
	bash .ci/bench.sh

tidy:
	$(GO) mod tidy
