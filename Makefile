# dcserve — build, run and test. Every target installs what it needs first (idempotent, quick when done).
#   make serve   build and start the server on the example configuration
#   make test    run every test (unit, integration, browser, fuzz smoke)
#   make build   release binary at .build/release/dcserve
SHELL := /bin/bash
ROOT := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
export PKG_CONFIG_PATH := $(ROOT)/.deps/brotli/lib/pkgconfig$(if $(PKG_CONFIG_PATH),:$(PKG_CONFIG_PATH))
VENV := $(ROOT)/.deps/venv
BROTLI_CLI := $(ROOT)/.deps/brotli/bin/brotli
DCSERVE := $(ROOT)/.build/release/dcserve
SERVE_ARGS ?= serve --config Config/dcserve.json
FUZZ_SECONDS ?= 60
export DCSERVE_BIN := $(DCSERVE)
export DCSERVE_BROTLI_CLI := $(BROTLI_CLI)

.PHONY: deps deps-test build serve test unit-test integration-test fuzz bench clean

deps:
	@scripts/install-system-deps.sh build
	@scripts/build-brotli.sh

deps-test: deps
	@scripts/install-system-deps.sh test
	@scripts/install-python-deps.sh

build: deps
	swift build -c release --product dcserve
	@$(DCSERVE) --version | grep -q '^brotli 1\.[1-9]' || { echo "error: dcserve is not linked with brotli >= 1.1" >&2; exit 1; }

serve: build
	$(DCSERVE) $(SERVE_ARGS)

unit-test: deps-test
	swift build --build-tests
	swift test --skip-build

integration-test: deps-test build
	$(VENV)/bin/python -m pytest -q Tests/integration

test: unit-test integration-test

bench: deps-test build
	@for b in bench/*/run; do echo "== $$b"; $$b || exit 1; done

clean:
	rm -rf .build .deps
