# occ — build, test, lint. `make test` is what CI runs.
GO       ?= go
PKG      := github.com/openclaw/occ
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT   ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
LDFLAGS  := -s -w -X $(PKG)/internal/cli.version=$(VERSION) -X $(PKG)/internal/cli.commit=$(COMMIT)
TESTFLAGS ?= -count=1 -timeout 50m

# The binary is static and path-free; tests build with the same settings so that one compile
# of the (large) dependency graph serves both `make build` and `make test`.
export CGO_ENABLED := 0
export GOFLAGS := $(strip $(GOFLAGS) -trimpath)

.PHONY: build test unit lint bench testenv testdocker testdockerd testcontainerd testcompose testpodman generate fuzz e2e

build:
	$(GO) build -ldflags '$(LDFLAGS)' -o bin/occ ./cmd/occ

# Builds kube-apiserver and etcd once (cached under $$XDG_CACHE_HOME/occ/testenv).
testenv:
	@scripts/testenv >/dev/null

# Starts (or reuses) the three private Docker engines of the Docker + k3d test bed: the default
# one, Docker 29 on its containerd image store; the classic one, Docker 28.5.2 on the classic
# store (both built once by scripts/testdockerd); and the legacy one, Debian's 20.10.
testdocker:
	@scripts/testdocker >/dev/null
	@scripts/testdocker classic >/dev/null
	@scripts/testdocker legacy >/dev/null

# Builds dockerd and docker-proxy of the bed's default (Docker 29) and classic (Docker 28.5.2)
# engines once from the Go module proxy (cached under $$XDG_CACHE_HOME/occ/testdockerd);
# scripts/testdocker runs it when needed.
testdockerd:
	@scripts/testdockerd >/dev/null
	@scripts/testdockerd v28.5.2 >/dev/null

# Builds containerd and ctr for the k3s stand-in node image once (cached under
# $$XDG_CACHE_HOME/occ/testcontainerd), before the tests that bake them into the image.
testcontainerd:
	@scripts/testcontainerd >/dev/null

# Builds the real docker compose CLI plugin once from the Go module proxy (cached under
# $$XDG_CACHE_HOME/occ/testcompose) and installs it in $${DOCKER_CONFIG:-~/.docker}/cli-plugins.
testcompose:
	@scripts/testcompose >/dev/null

# Installs Debian's podman when absent and starts (or reuses) the PRIVATE Podman API service of
# the Podman tier (state under $$XDG_CACHE_HOME/occ/testpodman).
testpodman:
	@scripts/testpodman >/dev/null

# Unit and integration tests; integration tests run against a real kube-apiserver + etcd, the
# Docker tier against the private engines of scripts/testdocker: the default one (DOCKER_HOST,
# Docker 29 on the containerd image store), the classic-store one (OCC_TEST_DOCKER_CLASSIC_HOST,
# Docker 28.5.2) and, for the tests of what occ refuses on an old engine, the legacy one
# (OCC_TEST_DOCKER_LEGACY_HOST); the Podman tier against scripts/testpodman (OCC_TEST_PODMAN_HOST).
# scripts/gotest runs internal/occdev's bed tests in two streams, the other packages at the head
# of the second (one bed test alone leaves a core idle). Then, with nothing else running, the
# engine-restart tests stop and start the classic-store and the default engine under an
# environment (OCC_TEST_ENGINE_RESTART=1; skipped, saying so, in the first run).
test: testenv testcontainerd testdocker testcompose testpodman
	docker_host="$$(scripts/testdocker)" && classic_host="$$(scripts/testdocker classic)" && legacy_host="$$(scripts/testdocker legacy)" && podman_host="$$(scripts/testpodman)" && \
	DOCKER_HOST="$$docker_host" OCC_TEST_DOCKER_CLASSIC_HOST="$$classic_host" OCC_TEST_DOCKER_LEGACY_HOST="$$legacy_host" OCC_TEST_PODMAN_HOST="$$podman_host" KUBEBUILDER_ASSETS="$$(scripts/testenv)" GO=$(GO) scripts/gotest $(TESTFLAGS) && \
	echo "restarting the engines under environments (nothing else runs now):" && \
	DOCKER_HOST="$$docker_host" OCC_TEST_DOCKER_CLASSIC_HOST="$$classic_host" OCC_TEST_DOCKER_LEGACY_HOST="$$legacy_host" OCC_TEST_PODMAN_HOST="$$podman_host" KUBEBUILDER_ASSETS="$$(scripts/testenv)" OCC_TEST_ENGINE_RESTART=1 $(GO) test $(TESTFLAGS) -run '^TestEngineRestart' ./internal/occdev/

lint:
	@out="$$(gofmt -l $$(git ls-files '*.go'))"; if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) test -count=1 ./internal/repocheck/

# The benchmarks also get the k3d, helm and kubectl CLIs (scripts/testclis builds them once) for
# the anchor benchmark's command-line sequence; make test never builds them.
bench: testenv testcontainerd testdocker testcompose testpodman
	docker_host="$$(scripts/testdocker)" && classic_host="$$(scripts/testdocker classic)" && legacy_host="$$(scripts/testdocker legacy)" && podman_host="$$(scripts/testpodman)" && \
	DOCKER_HOST="$$docker_host" OCC_TEST_DOCKER_CLASSIC_HOST="$$classic_host" OCC_TEST_DOCKER_LEGACY_HOST="$$legacy_host" OCC_TEST_PODMAN_HOST="$$podman_host" KUBEBUILDER_ASSETS="$$(scripts/testenv)" OCC_TEST_CLIS="$$(scripts/testclis)" $(GO) test -run '^$$' -bench . -benchmem ./...

# The opt-in end-to-end test: the shipped binary runs the real `occ dev up`/`down` with the
# embedded pins on a real Docker host (DOCKER_HOST or the default socket), fetching the real
# images and archive. It needs network access to github.com, ghcr.io and docker.io; it is not
# part of `make test`.
e2e:
	@if [ "$$OCC_E2E_DOCKER" != 1 ]; then \
		echo "make e2e runs the real 'occ dev up' and 'occ dev down' (k3d, Kubernetes-only profile) with the embedded pins."; \
		echo "It needs: OCC_E2E_DOCKER=1; a running Docker engine on a local unix socket (DOCKER_HOST, the docker context, or /var/run/docker.sock);"; \
		echo "network access to github.com, ghcr.io and docker.io for the pinned archive and images; about 2 GB of disk."; \
		echo "The whole Kubernetes-only stack test also needs OCC_E2E_OCE_CHECKOUT=<an OCE checkout>, which it builds from."; \
		echo "Optional: OCC_E2E_TIMEOUT (a Go duration, default 20m, 40m for the whole stack); E2E_RUN=<test regexp> runs some tests only."; \
		echo "Run: OCC_E2E_DOCKER=1 OCC_E2E_OCE_CHECKOUT=~/src/openclaw-enterprise make e2e"; \
		exit 2; \
	fi
	$(GO) build -ldflags '$(LDFLAGS)' -o bin/occ ./cmd/occ
	OCC_E2E_BINARY="$(CURDIR)/bin/occ" $(GO) test -tags e2e -count=1 -timeout 90m -v -run '$(or $(E2E_RUN),.)' ./e2e/

generate:
	$(GO) generate ./...
