# occ — build, test, lint. `make test` is what CI runs.
GO       ?= go
PKG      := github.com/openclaw/occ
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT   ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
LDFLAGS  := -s -w -X $(PKG)/internal/cli.version=$(VERSION) -X $(PKG)/internal/cli.commit=$(COMMIT)
TESTFLAGS ?= -count=1 -timeout 30m

# The binary is static and path-free; tests build with the same settings so that one compile
# of the (large) dependency graph serves both `make build` and `make test`.
export CGO_ENABLED := 0
export GOFLAGS := $(strip $(GOFLAGS) -trimpath)

.PHONY: build test unit lint bench testenv testdocker testcompose generate fuzz

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o bin/occ ./cmd/occ

# Builds kube-apiserver and etcd once (cached under $$XDG_CACHE_HOME/occ/testenv).
testenv:
	@scripts/testenv >/dev/null

# Starts (or reuses) the private Docker engine of the Docker + k3d test bed.
testdocker:
	@scripts/testdocker >/dev/null

# Builds the real docker compose CLI plugin once from the Go module proxy (cached under
# $$XDG_CACHE_HOME/occ/testcompose) and installs it in $${DOCKER_CONFIG:-~/.docker}/cli-plugins.
testcompose:
	@scripts/testcompose >/dev/null

# Unit and integration tests; integration tests run against a real kube-apiserver + etcd, the
# Docker tier against the private engine of scripts/testdocker.
test: testenv testdocker testcompose
	docker_host="$$(scripts/testdocker)" && \
	DOCKER_HOST="$$docker_host" KUBEBUILDER_ASSETS="$$(scripts/testenv)" $(GO) test $(TESTFLAGS) ./...

lint:
	@out="$$(gofmt -l $$(git ls-files '*.go'))"; if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

bench: testenv testdocker testcompose
	docker_host="$$(scripts/testdocker)" && \
	DOCKER_HOST="$$docker_host" KUBEBUILDER_ASSETS="$$(scripts/testenv)" $(GO) test -run '^$$' -bench . -benchmem ./...

generate:
	$(GO) generate ./...
