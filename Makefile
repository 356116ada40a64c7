# mcpfleet: `make test` is the one command that runs every test; CI runs it
# through .ci/run.

GO      ?= go
NPM_DIR := testdata/npm
CONFORMANCE_DIR := testdata/conformance

.PHONY: test vet npm conformance-npm conformance bench demo

# go test ./... includes internal/conformance: the MCP conformance suite's
# client scenarios against a client built on the Manager (see its baseline.json).
test: npm conformance-npm vet
	$(GO) test -race -count=1 -timeout 15m ./...
	$(GO) test -run '^$$' -fuzz FuzzParseConfig -fuzztime 10s ./client/

vet:
	$(GO) vet ./...

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
	$(GO) test -count=1 -run '^TestClientSuite$$' -v ./internal/conformance/

# Benchmarks behind BENCHMARKS.md; compare with benchstat -col /impl.
bench: npm
	$(GO) test -run '^$$' -bench . -count 6 ./client/ ./snapshot/ ./transport/...

demo:
	$(GO) run ./examples/demo
