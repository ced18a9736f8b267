# outboxd developer commands. `make dev` runs the daemon on an embedded
# Postgres; `make test` runs the whole suite (what CI runs).

GO ?= go
SQLC = $(GO) tool -modfile=tools/go.mod sqlc
STATICCHECK = $(GO) tool -modfile=tools/go.mod staticcheck

.PHONY: dev build test vet generate check-generated fuzz bench clean

dev:
	$(GO) run ./cmd/outboxd dev

build:
	CGO_ENABLED=0 $(GO) build -trimpath -o bin/outboxd ./cmd/outboxd

test: vet check-generated
	$(GO) test -race -count=1 -timeout 20m ./...

vet:
	@unformatted="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"; \
	if [ -n "$$unformatted" ]; then echo "gofmt needed:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet ./...
	$(STATICCHECK) ./...

# Regenerate internal/dbsqlc from migrations/ and internal/dbsqlc/queries/.
generate:
	$(SQLC) generate

# Fails when the committed sqlc output is not what the queries generate.
check-generated:
	$(SQLC) diff

# Run each fuzz target for FUZZTIME (default 30s).
FUZZTIME ?= 30s
fuzz:
	$(GO) test ./policy -run='^$$' -fuzz=FuzzRedact$$ -fuzztime=$(FUZZTIME)
	$(GO) test ./policy -run='^$$' -fuzz=FuzzRedactString -fuzztime=$(FUZZTIME)
	$(GO) test ./policy -run='^$$' -fuzz=FuzzTruncate -fuzztime=$(FUZZTIME)

# The end-to-end benchmark: HTTP → transaction → River → loopback Slack.
bench:
	$(GO) run ./cmd/outboxd bench

clean:
	rm -rf bin .outboxd
