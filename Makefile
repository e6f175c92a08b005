# dcserve — build, run and test. Every target installs what it needs first (idempotent, quick when done).
#   make serve   build and start the server on the example configuration
#   make test    run every test (unit, integration, browser, fuzz smoke, bench smoke)
#   make build   release binary at .build/release/dcserve
SHELL := /bin/bash
ROOT := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
export PKG_CONFIG_PATH := $(ROOT)/.deps/brotli/lib/pkgconfig$(if $(PKG_CONFIG_PATH),:$(PKG_CONFIG_PATH))
VENV := $(ROOT)/.deps/venv
BROTLI_CLI := $(ROOT)/.deps/brotli/bin/brotli
DCSERVE := $(ROOT)/.build/release/dcserve
SERVE_ARGS ?= serve --config Config/dcserve.json
FUZZ_SECONDS ?= 60
FUZZ_SMOKE_SECONDS ?= 30
# libFuzzer target for the HTTP request parser: the parser's own sources plus an entry point,
# compiled with -sanitize=fuzzer,address (no SwiftPM: the parser has no dependencies).
FUZZ_BIN := $(ROOT)/.build/fuzz/request-parser-fuzz
FUZZ_SOURCES := Sources/HTTPServer/RequestParser.swift Sources/HTTPServer/ParsedRequest.swift \
	Sources/HTTPServer/HTTPParseError.swift Sources/HTTPCore/HTTPVersion.swift Sources/HTTPCore/ChunkedCoding.swift \
	Sources/HTTPCore/HTTPFieldSyntax.swift \
	Fuzz/RequestParserFuzz/RequestParserFuzz.swift
# libFuzzer target for the upstream response parser (HTTPClient's input), built the same way from
# HTTPCore's parser sources. RESPONSE_FUZZ_SMOKE_SECONDS bounds its share of `make fuzz-smoke`.
RESPONSE_FUZZ_BIN := $(ROOT)/.build/fuzz/response-parser-fuzz
RESPONSE_FUZZ_SOURCES := Sources/HTTPCore/ResponseParser.swift Sources/HTTPCore/ParsedResponseHead.swift \
	Sources/HTTPCore/ResponseParseError.swift Sources/HTTPCore/ResponseParserLimits.swift \
	Sources/HTTPCore/HTTPBodyLength.swift Sources/HTTPCore/HTTPFieldSyntax.swift \
	Sources/HTTPCore/HTTPVersion.swift Sources/HTTPCore/ChunkedCoding.swift \
	Fuzz/ResponseParserFuzz/ResponseParserFuzz.swift
RESPONSE_FUZZ_SECONDS ?= $(FUZZ_SECONDS)
RESPONSE_FUZZ_SMOKE_SECONDS ?= 10
export DCSERVE_BIN := $(DCSERVE)
export DCSERVE_BROTLI_CLI := $(BROTLI_CLI)

.PHONY: deps deps-test build proxy-floor serve test unit-test integration-test fuzz fuzz-smoke bench bench-smoke clean \
	fuzz-response-parser client-e2e client-only-build

deps:
	@scripts/install-system-deps.sh build
	@scripts/build-brotli.sh

deps-test: deps
	@scripts/install-system-deps.sh test
	@scripts/install-python-deps.sh

# Release builds: cross-module optimisation on every module (HTTPTypes' field storage inlines into the
# server's hot paths) and no run-time exclusivity checks (the compile-time ones stay; debug builds, which
# the unit tests use, keep the run-time checks too). Measured on bench/proxy's 1 KB request, 4 alternating
# rounds: 29.7 µs CPU per request without either, 27.9 with CMO, 26.5 with both.
RELEASE_SWIFTFLAGS := -Xswiftc -cross-module-optimization -Xswiftc -enforce-exclusivity=unchecked

build: deps
	swift build -c release --product dcserve $(RELEASE_SWIFTFLAGS)
	@$(DCSERVE) --version | grep -q '^brotli 1\.[1-9]' || { echo "error: dcserve is not linked with brotli >= 1.1" >&2; exit 1; }

# bench/proxy's floor (FLOOR=1): the server and client cores with a bare forwarding handler.
proxy-floor: deps
	swift build -c release --product proxy-floor $(RELEASE_SWIFTFLAGS)

serve: build
	$(DCSERVE) $(SERVE_ARGS)

# The PostgreSQL store tests run against a throwaway PostgreSQL 15 in .build/pg/unit,
# stopped whether the tests pass or not (the integration tests start their own, in pg_support.py).
unit-test: deps-test
	swift build --build-tests
	@url=$$(scripts/throwaway-postgres.sh start $(ROOT)/.build/pg/unit) || exit 1; \
	  DCSERVE_TEST_PG_URL=$$url swift test --skip-build; rc=$$?; \
	  scripts/throwaway-postgres.sh stop $(ROOT)/.build/pg/unit; exit $$rc

integration-test: deps-test build client-e2e
	$(VENV)/bin/python -m pytest -q Tests/integration

# The Swift driver of Tests/integration/test_client_end_to_end.py (the portable client through its
# AsyncHTTPClient and URLSession paths); a debug build, like the unit tests'.
client-e2e: deps
	swift build --product dictionary-client-e2e

# The client targets built with no system library findable (a build folder of their own, so swift-crypto
# is compiled again: minutes). Not part of `make test`; the closure tests there check the same by construction.
client-only-build: deps-test
	DCSERVE_CLIENT_ONLY_BUILD=1 $(VENV)/bin/python -m pytest -q Tests/integration/test_client_closure.py -k without_the_servers

test: unit-test integration-test fuzz-smoke bench-smoke

# Every bench once at its smallest size, for its own checks (not its timings): see bench/smoke.
bench-smoke: deps-test build
	bench/smoke

$(FUZZ_BIN): $(FUZZ_SOURCES)
	@mkdir -p $(dir $(FUZZ_BIN)) $(ROOT)/.build/fuzz/corpus
	swiftc -sanitize=fuzzer,address -parse-as-library -O -module-name RequestParserFuzz -package-name dcserve $(FUZZ_SOURCES) -o $@ 2>&1 \
	  | { grep -v "Cannot export local symbol" || true; }
	@test -x $@

# Runs the parser fuzzer for FUZZ_SECONDS (new inputs go to .build/fuzz/corpus; seeds in Fuzz/corpus).
fuzz: $(FUZZ_BIN)
	$(FUZZ_BIN) -max_total_time=$(FUZZ_SECONDS) -max_len=4096 -timeout=10 -print_final_stats=1 \
	  $(ROOT)/.build/fuzz/corpus $(ROOT)/Fuzz/corpus

fuzz-smoke:
	rm -rf $(PARSER_FUZZ_SCRATCH)/smoke-corpus
	$(MAKE) fuzz FUZZ_SECONDS=$(FUZZ_SMOKE_SECONDS) RESPONSE_FUZZ_SECONDS=$(RESPONSE_FUZZ_SMOKE_SECONDS) PARSER_FUZZ_CONFIG=debug \
	  PARSER_FUZZ_CORPUS=$(PARSER_FUZZ_SCRATCH)/smoke-corpus

# --- response parser fuzzer (HTTPClient) ---
fuzz: fuzz-response-parser

$(RESPONSE_FUZZ_BIN): $(RESPONSE_FUZZ_SOURCES)
	@mkdir -p $(dir $(RESPONSE_FUZZ_BIN)) $(ROOT)/.build/fuzz/response-corpus
	swiftc -sanitize=fuzzer,address -parse-as-library -O -module-name ResponseParserFuzz -package-name dcserve $(RESPONSE_FUZZ_SOURCES) -o $@ 2>&1 \
	  | { grep -v "Cannot export local symbol" || true; }
	@test -x $@

# Runs the response parser fuzzer for RESPONSE_FUZZ_SECONDS (default FUZZ_SECONDS) (new inputs go to .build/fuzz/response-corpus;
# seeds in Fuzz/ResponseParserFuzz/corpus).
fuzz-response-parser: $(RESPONSE_FUZZ_BIN)
	$(RESPONSE_FUZZ_BIN) -max_total_time=$(RESPONSE_FUZZ_SECONDS) -max_len=4096 -timeout=10 -print_final_stats=1 \
	  $(ROOT)/.build/fuzz/response-corpus $(ROOT)/Fuzz/ResponseParserFuzz/corpus
# --- end response parser fuzzer ---

bench: deps-test build
	@for b in bench/*/run; do echo "== $$b"; $$b || exit 1; done

clean:
	rm -rf .build .deps

# --- Parser fuzzers --------------------------------------------------------------------------
# One libFuzzer driver (Fuzz/DCServeFuzz, its own package and scratch path, built with
# -sanitize=fuzzer,address) with one mode per parser of outside input: Accept-Encoding, the
# dictionary fields (Available-Dictionary, Dictionary-ID, Use-As-Dictionary), negotiation, URL
# patterns, dcb/dcz/br/zstd/gzip decoding with a dictionary, the configuration loader, the dictionary
# client's response handling, history dictionary paths, partition ids, the lab (plan and server),
# the smaller field parsers (Cache-Control lifetimes, conditionals, Vary, trusted proxies, paths), and
# the proxy's handling of an upstream's response (head cleaning, body decoding to identity), and
# the pure-Swift zstd decoder against libzstd (zstd-differential: same output or both refuse), and
# the server's connection state machine driven by scripts of events over an in-memory transport
# (connection: reads, writes, handler answers, streams, cancels, closes, deadlines, shutdown).
# Coverage instrumentation is limited to the parsers' modules (scripts/swiftc-coverage-scope).
# `make fuzz` runs each for PARSER_FUZZ_SECONDS; `make fuzz-smoke` for PARSER_FUZZ_SMOKE_SECONDS each.
PARSER_FUZZ_SCRATCH := $(ROOT)/.build-fuzz
# Release for `make fuzz` (executions per second); `make fuzz-smoke` builds debug, where each mode runs
# for seconds and the build is what takes the time (a debug build compiles in less time).
PARSER_FUZZ_CONFIG ?= release
PARSER_FUZZ_BIN = $(PARSER_FUZZ_SCRATCH)/$(PARSER_FUZZ_CONFIG)/dcserve-fuzz
PARSER_FUZZ_MODES := accept-encoding dictionary-fields negotiation url-pattern decode config \
	client-response history-path partition lab header-fields upstream-response zstd-differential connection
PARSER_FUZZ_SMOKE_SECONDS ?= 3
# `fuzz-smoke` runs `make fuzz FUZZ_SECONDS=$(FUZZ_SMOKE_SECONDS)`: then each parser gets the smoke time.
PARSER_FUZZ_SECONDS ?= $(if $(filter $(FUZZ_SMOKE_SECONDS),$(FUZZ_SECONDS)),$(PARSER_FUZZ_SMOKE_SECONDS),$(FUZZ_SECONDS))
PARSER_FUZZ_RUNS ?= -1
# SWIFT_BACKTRACE=enable=no: on a finding, libFuzzer reports it and writes the input at once (the Swift
# runtime's backtracer would first spend minutes symbolicating the 120 MB binary).
# The configuration loader reads files through Foundation, whose one-time buffers LeakSanitizer
# reports at exit: that mode runs with ASAN_OPTIONS=detect_leaks=0.

.PHONY: parser-fuzz-bin fuzz-parsers

# The cached build manifest goes first: SwiftPM keeps it while the fuzz package's own files stay the
# same, so a source file added to one of dcserve's targets (a path dependency here) was left out of
# the build ("cannot find type ... in scope") until the manifest was made again.
parser-fuzz-bin: deps
	rm -f $(PARSER_FUZZ_SCRATCH)/$(PARSER_FUZZ_CONFIG).yaml
	SWIFT_EXEC=$(ROOT)/Fuzz/DCServeFuzz/scripts/swiftc-coverage-scope \
	  swift build --package-path Fuzz/DCServeFuzz --scratch-path $(PARSER_FUZZ_SCRATCH) -c $(PARSER_FUZZ_CONFIG) \
	  -Xswiftc -sanitize=fuzzer,address -Xswiftc -enable-testing --product dcserve-fuzz

# Each mode: new inputs in $(PARSER_FUZZ_CORPUS)/<mode> (.build-fuzz/corpus), seeds in
# Fuzz/DCServeFuzz/corpus/<mode>. The smoke run starts from the seeds alone (an empty corpus of its
# own): a debug build replaying what long runs collected would take minutes.
PARSER_FUZZ_CORPUS ?= $(PARSER_FUZZ_SCRATCH)/corpus
fuzz-parsers: parser-fuzz-bin
	@for m in $(PARSER_FUZZ_MODES); do \
	  mkdir -p $(PARSER_FUZZ_CORPUS)/$$m; echo "== fuzz $$m ($(PARSER_FUZZ_SECONDS) s)"; \
	  env DCSERVE_FUZZ_MODE=$$m SWIFT_BACKTRACE=enable=no $$( [ $$m = config ] && echo ASAN_OPTIONS=detect_leaks=0 ) $(PARSER_FUZZ_BIN) -max_total_time=$(PARSER_FUZZ_SECONDS) -runs=$(PARSER_FUZZ_RUNS) \
	    -max_len=4096 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
	    $(PARSER_FUZZ_CORPUS)/$$m $(ROOT)/Fuzz/DCServeFuzz/corpus/$$m 2>&1 \
	    | grep -E "^stat::number_of_executed_units|^stat::peak_rss|ERROR|SUMMARY|panic|Fatal error|==[0-9]+==" ; \
	  test $${PIPESTATUS[0]} -eq 0 || exit 1; \
	done

fuzz: fuzz-parsers

# --- ThreadSanitizer over the integration suite (not part of `make test`) -------------------------
# dcserve built with -sanitize=thread and DCSERVE_TSAN_LOCKS=1 (Locked is then an NSLock TSan sees,
# see Package.swift), debug, in a scratch path of its own; the whole integration suite runs against it
# with every report collected (halt_on_error=0 and exitcode=0: a report fails no test by itself, each
# process writes its reports to $(TSAN_REPORTS)/dcserve.<pid>), then scripts/tsan-reports.py lists
# each distinct report and the target fails if there is any. Test failures are shown, not fatal: under
# TSan (a debug build, several times slower, its runtime in every process) tests that bound memory or
# time can fail for that alone (test_fetch_streaming's peak-RSS bounds, test_live_partitions' ten
# thousand partitions). Known false positives are suppressed in scripts/tsan-suppressions.txt (each
# with the reason).
# TSAN_PYTEST_ARGS: extra pytest arguments (e.g. -k to rerun a few tests).
TSAN_SCRATCH := $(ROOT)/.build-tsan
TSAN_BIN := $(TSAN_SCRATCH)/debug/dcserve
TSAN_REPORTS := $(TSAN_SCRATCH)/reports
TSAN_PYTEST_ARGS ?=
.PHONY: tsan-build tsan-integration

tsan-build: deps
	DCSERVE_TSAN_LOCKS=1 swift build --sanitize=thread --scratch-path $(TSAN_SCRATCH) --product dcserve

tsan-integration: deps-test tsan-build client-e2e
	@rm -rf $(TSAN_REPORTS); mkdir -p $(TSAN_REPORTS)
	DCSERVE_BIN=$(TSAN_BIN) SWIFT_BACKTRACE=enable=no \
	  TSAN_OPTIONS="halt_on_error=0 exitcode=0 log_path=$(TSAN_REPORTS)/dcserve suppressions=$(ROOT)/scripts/tsan-suppressions.txt" \
	  $(VENV)/bin/python -m pytest -q Tests/integration $(TSAN_PYTEST_ARGS); rc=$$?; \
	  echo "pytest exit status $$rc (see above: under TSan, bounds on memory or time may fail)"; \
	  $(VENV)/bin/python scripts/tsan-reports.py $(TSAN_REPORTS)
