# mcpfleet: `make test` is the one command that runs every test; CI runs it
# through .ci/run.

GO      ?= go
NPM_DIR := testdata/npm
CONFORMANCE_DIR := testdata/conformance

.PHONY: test vet crossbuild npm conformance-npm conformance bench demo soak toolcorpus services api api-update stress

# go test ./... includes internal/testkit/conformance: the MCP conformance suite's
# client scenarios against a client built on the Manager (see its baseline.json).
# otel/ is a module of its own (so that the core requires no OpenTelemetry):
# ./... of the core does not reach it, so it is vetted and tested apart. So
# are the LLM adapters (llm/anthropic, llm/openai, llm/gemini) and the agent
# example, each a module of its own with its SDK, and the shared stores
# (store/redis, store/postgres), which start their own redis-server and
# PostgreSQL (see the services target). cmd/mcpfleet needs nothing beyond
# the core's dependencies (golang.org/x/sys tells a terminal), so it is in
# the core module and ./... covers it.
test: services npm conformance-npm vet crossbuild
	$(GO) test -race -count=1 -timeout 15m ./...
	cd otel && $(GO) test -race -count=1 ./...
	cd llm/anthropic && $(GO) test -race -count=1 ./...
	cd llm/openai && $(GO) test -race -count=1 ./...
	cd llm/gemini && $(GO) test -race -count=1 ./...
	cd examples/agent && $(GO) test -race -count=1 ./...
	cd store/redis && $(GO) test -race -count=1 ./...
	cd store/postgres && $(GO) test -race -count=1 ./...
	# Budgets in executions, about 10 s each here: a -fuzztime in seconds
	# races Go 1.26's fuzz coordinator at its deadline and fails a target
	# that found nothing ("context deadline exceeded", go.dev/issue/75804).
	$(GO) test -run '^$$' -fuzz FuzzParseConfig -fuzztime 100000x ./client/
	$(GO) test -run '^$$' -fuzz FuzzURL -fuzztime 400000x ./internal/redact/

# The exported API of the public packages against its record in api/*.txt
# (go test ./... runs it too): a change of the API updates the record in the
# same change, with make api-update, and says so in CHANGELOG.md.
api:
	$(GO) test -count=1 -run '^TestAPI' ./internal/testkit/apicheck/

api-update:
	$(GO) test -count=1 -run '^TestAPI$$' ./internal/testkit/apicheck/ -update

vet:
	$(GO) mod tidy -diff
	$(GO) vet ./...
	cd otel && $(GO) mod tidy -diff && $(GO) vet ./...
	cd llm/anthropic && $(GO) mod tidy -diff && $(GO) vet ./...
	cd llm/openai && $(GO) mod tidy -diff && $(GO) vet ./...
	cd llm/gemini && $(GO) mod tidy -diff && $(GO) vet ./...
	cd examples/agent && $(GO) mod tidy -diff && $(GO) vet ./...
	cd store/redis && $(GO) mod tidy -diff && $(GO) vet ./...
	cd store/postgres && $(GO) mod tidy -diff && $(GO) vet ./...

# redis-server and PostgreSQL 15 for the shared-state tests, and the
# unprivileged user PostgreSQL runs as (.ci/services): installed when
# missing, quick when not.
services:
	./.ci/services

# Every package, tests included, must build and vet for the other OSes hosts
# run on; linux/amd64 is the one whose tests run.
crossbuild:
	GO=$(GO) ./.ci/crossbuild

# The third-party MCP servers the tests run against, pinned in
# testdata/npm/package-lock.json and installed from the npm registry.
npm: $(NPM_DIR)/node_modules/.package-lock.json

$(NPM_DIR)/node_modules/.package-lock.json: $(NPM_DIR)/package.json $(NPM_DIR)/package-lock.json
	npm ci --prefix $(NPM_DIR) --no-audit --no-fund --loglevel=error

# The MCP conformance suite and the Node 22 it runs on, pinned in
# testdata/conformance/package-lock.json and installed from the npm registry.
conformance-npm: $(CONFORMANCE_DIR)/node_modules/.package-lock.json

$(CONFORMANCE_DIR)/node_modules/.package-lock.json: $(CONFORMANCE_DIR)/package.json $(CONFORMANCE_DIR)/package-lock.json
	npm ci --prefix $(CONFORMANCE_DIR) --no-audit --no-fund --loglevel=error

# The conformance run alone, with one line per scenario.
conformance: conformance-npm
	$(GO) test -count=1 -run '^TestClientSuite$$' -v ./internal/testkit/conformance/

# Benchmarks behind BENCHMARKS.md; compare with benchstat -col /impl.
bench: npm
	$(GO) test -run '^$$' -bench . -count 6 ./client/ ./snapshot/ ./internal/catalog/ ./transport/... ./toolsearch/ ./gateway/ ./cmd/mcpfleet/
	cd otel && $(GO) test -run '^$$' -bench . -benchmem -count 6 ./...

# The timing-sensitive packages, STRESS_N times each (20 unless told),
# beside as many busy loops as there are cores: see .ci/stress.
stress: npm services
	GO=$(GO) ./.ci/stress

demo:
	$(GO) run ./examples/demo

# Capture the tool-search corpus (testdata/toolcorpus/corpus.json) again from
# the servers pinned in testdata/toolcorpus/npm. Only for a change of those
# packages: the tests read the committed file and need no npm.
toolcorpus:
	npm ci --prefix testdata/toolcorpus/npm --ignore-scripts --no-audit --no-fund --loglevel=error
	$(GO) run ./internal/testkit/toolcorpus/capture

# The soak: 22 servers of every kind, 8 callers, a random fault every
# 0.1-0.5 s for $(SOAK); fails on any call outside the documented classes and
# prints a Markdown summary for BENCHMARKS.md. go test ./... (so make test)
# runs it for 30 s. SOAK=60s make soak for a short one; SOAK_SEED=<n> replays.
SOAK ?= 10m
SOAK_TIMEOUT ?= 30m

soak: npm
	SOAK=$(SOAK) $(GO) test -race -count=1 -run '^TestSoak$$' -timeout $(SOAK_TIMEOUT) -v ./internal/testkit/soak/
