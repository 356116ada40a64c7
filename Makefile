# mcpfleet: `make test` is the one command that runs every test; CI runs it
# through .ci/run.

GO      ?= go
NPM_DIR := testdata/npm

.PHONY: test vet npm bench demo

test: npm vet
	$(GO) test -race -count=1 -timeout 15m ./...
	$(GO) test -run '^$$' -fuzz FuzzParseConfig -fuzztime 10s ./client/

vet:
	$(GO) vet ./...

# The third-party MCP servers the tests run against, pinned in
# testdata/npm/package-lock.json and installed from the npm registry.
npm: $(NPM_DIR)/node_modules/.package-lock.json

$(NPM_DIR)/node_modules/.package-lock.json: $(NPM_DIR)/package.json $(NPM_DIR)/package-lock.json
	npm ci --prefix $(NPM_DIR) --no-audit --no-fund --loglevel=error

# Benchmarks behind BENCHMARKS.md; compare with benchstat -col /impl.
bench: npm
	$(GO) test -run '^$$' -bench . -count 6 ./client/ ./snapshot/ ./transport/...

demo:
	$(GO) run ./examples/demo
