# outboxd developer commands. `make dev` runs the daemon on an embedded
# Postgres; `make test` runs the whole suite (what CI runs).

GO ?= go
SQLC = $(GO) tool -modfile=tools/go.mod sqlc
STATICCHECK = $(GO) tool -modfile=tools/go.mod staticcheck

.PHONY: dev build test check-cgo tools-note browser-note mcp-ts mcp-ts-note vet generate check-generated fuzz bench clean console

# The binary replaces the shell, so Ctrl-C reaches outboxd alone and a
# normal stop ends make cleanly.
dev: build
	exec ./bin/outboxd dev

build:
	CGO_ENABLED=0 $(GO) build -trimpath -o bin/outboxd ./cmd/outboxd

test: check-cgo tools-note browser-note mcp-ts-note vet check-generated
	$(GO) test -race -count=1 -timeout 20m ./...
	$(MAKE) fuzz FUZZTIME=20000x
	@$(MAKE) --no-print-directory browser-note
	@$(MAKE) --no-print-directory mcp-ts-note

# Two tests run programs nobody here wrote, from npm: the MCP front door's
# with the official TypeScript SDK as its client
# (internal/api/mcp_ts_test.go), and the MCP connectors' against the
# official reference server, server-everything
# (internal/api/connectors_everything_test.go). This installs both from
# package-lock.json into tools/mcp-ts (.ci/run does); without node or a
# package its test is skipped, and mcp-ts-note says so loudly.
MCP_TS_MODULES = tools/mcp-ts/node_modules/@modelcontextprotocol
mcp-ts:
	cd tools/mcp-ts && npm ci --no-audit --no-fund
mcp-ts-note:
	@if ! command -v node >/dev/null 2>&1; then \
		echo "*** make test: NO NODE: the TypeScript MCP client test and the reference MCP server test DID NOT RUN (skipped)."; \
		echo "*** Install node 18+ and run make mcp-ts (npm, from the npm registry)."; \
	else \
		if [ -f $(MCP_TS_MODULES)/sdk/package.json ]; then \
			echo "make test: the MCP front door is tested with the official TypeScript SDK too"; \
		else \
			echo "*** make test: NO TYPESCRIPT MCP SDK: the TypeScript MCP client test DID NOT RUN (skipped)."; \
			echo "*** Run make mcp-ts (npm, from the npm registry)."; \
		fi; \
		if [ -f $(MCP_TS_MODULES)/server-everything/package.json ]; then \
			echo "make test: the MCP connectors are tested against the reference MCP server (server-everything) too"; \
		else \
			echo "*** make test: NO REFERENCE MCP SERVER: the reference MCP server test DID NOT RUN (skipped)."; \
			echo "*** Run make mcp-ts (npm, from the npm registry)."; \
		fi; \
	fi

# The console's browser suite (console/browser_test.go) needs a Chromium;
# without one it is skipped, and this says so loudly.
CHROMIUM ?= $(or $(OUTBOXD_CHROMIUM),$(shell command -v chromium chromium-browser google-chrome google-chrome-stable 2>/dev/null | head -n1))
browser-note:
	@if [ -n "$(CHROMIUM)" ]; then \
		echo "make test: the console's browser suite runs in $(CHROMIUM)"; \
	else \
		echo "*** make test: NO CHROMIUM FOUND: the console's browser suite DID NOT RUN (skipped)."; \
		echo "*** Install Debian's chromium package (apt-get install chromium) or set OUTBOXD_CHROMIUM."; \
	fi

# Rebuild the web console (console/dist, embedded in the binary and
# committed, so that building and testing need no npm) from console/src,
# and record the digests TestBuildIsCurrent checks. `npm install --no-save`
# installs the versions package-lock.json pins without rewriting it; npm
# 11's `npm ci` refuses the lock file because it lists only the rollup
# binaries of the platforms npm was run on.
console:
	cd console && npm install --no-save --no-audit --no-fund && npm run build
	$(GO) test ./console -run '^TestBuildIsCurrent$$' -count=1 -update-stamp

# go test -race needs cgo, hence a C compiler. Go turns cgo off by itself
# when it finds none, so CGO_ENABLED tells both cases.
check-cgo:
	@if [ "$$($(GO) env CGO_ENABLED)" != 1 ]; then \
		echo "make test runs go test -race, which needs cgo and so a C compiler, but CGO_ENABLED is 0." >&2; \
		echo "Install gcc or clang (Debian/Ubuntu: apt-get install gcc; macOS: xcode-select --install)," >&2; \
		echo "and do not set CGO_ENABLED=0." >&2; \
		exit 1; \
	fi

tools-note:
	@echo "make test: staticcheck and sqlc are built from tools/go.mod on first use (a few minutes, once)"

vet:
	@unformatted="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"; \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(STATICCHECK) ./...

# Regenerate internal/platform/dbsqlc from migrations/ and internal/platform/dbsqlc/queries/.
generate:
	$(SQLC) generate

# Fails when the committed sqlc output is not what the queries generate.
check-generated:
	$(SQLC) diff

# Run each fuzz target for FUZZTIME (default 30s; `make test` runs 20000
# inputs each: a count, because a wall-clock -fuzztime can fail with
# "context deadline exceeded" and no finding, a race in Go 1.26's fuzz
# coordinator, golang/go#75804, fixed in Go 1.27). A failing input is saved under policy/testdata/fuzz and then
# replayed by every `go test`.
FUZZTIME ?= 30s
FUZZ_TARGETS = FuzzRedact FuzzRedactString FuzzRedactSecrets FuzzTruncate
fuzz:
	@for target in $(FUZZ_TARGETS); do \
		echo "$(GO) test ./policy -run='^$$' -fuzz=^$$target\$$ -fuzztime=$(FUZZTIME)"; \
		$(GO) test ./policy -run='^$$' -fuzz="^$$target\$$" -fuzztime=$(FUZZTIME) || exit 1; \
	done

# The end-to-end benchmark against River raw (docs/benchmark.md); e.g.
# BENCHFLAGS="--backlog 100000".
bench:
	$(GO) run ./cmd/outboxd bench $(BENCHFLAGS)

# clean removes bin/, .outboxd and the embedded cluster, also when it lives
# outside the checkout (/var/tmp/outboxd-pg-<hash>, for a checkout root
# cannot hand to the postgres user; its data-dir.txt names the checkout's
# .outboxd/pg). It runs the built binary's `dev clean` when there is one,
# so that nothing is compiled just to delete directories; without one the
# shell removes the same directories, found by the same names, once no
# `outboxd dev` runs on them.
DEV_PG = $(CURDIR)/.outboxd/pg
clean:
	@if [ -x bin/outboxd ]; then \
		./bin/outboxd dev clean || exit 1; \
	else \
		pid=$$(sed -n 's/.*"pid": *\([0-9]*\).*/\1/p' .outboxd/running.json 2>/dev/null); \
		if [ -n "$$pid" ] && kill -0 "$$pid" 2>/dev/null; then \
			echo "outboxd dev (pid $$pid) is running on .outboxd: stop it first" >&2; exit 1; \
		fi; \
		hash12() { printf %s "$$1" | sha256sum | cut -c1-12; }; \
		fallback=/var/tmp/outboxd-pg-$$(hash12 '$(DEV_PG)'); \
		for dir in /tmp/outboxd-sock-$$(hash12 '$(DEV_PG)') /tmp/outboxd-sock-$$(hash12 "$$fallback/data") "$$fallback" .outboxd; do \
			if [ -e "$$dir" ]; then rm -rf "$$dir" && echo "removed $$dir" || exit 1; fi; \
		done; \
	fi
	rm -rf bin
