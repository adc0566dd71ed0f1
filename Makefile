# Thin wrapper over CMake. `make test` is the one command that installs what is missing,
# checks the format, builds a normal and an ASan+UBSan tree and runs the tests (see test:).
BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
# The build's own output only: no "Entering directory" line per recursive make (a newcomer
# reading `make demo` sees the build's progress, then the demo).
MAKEFLAGS  += --no-print-directory
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
# ctest runs twice as many tests as there are cores: the end-to-end units spend most of their
# time waiting on daemons and timers; a unit that keeps several cores busy says so (PROCESSORS,
# cmake/test-tools.cmake) and counts for that many.
CTEST_JOBS ?= $(shell echo $$(( $(JOBS) * 2 )))
SAN_ENV    = ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
             UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
CTEST_ARGS ?= --output-on-failure
FUZZ_SECONDS ?= 60

SOURCES = $(shell git ls-files --cached --others --exclude-standard '*.c' '*.h' 2>/dev/null)

.PHONY: all build asan deps test test-normal test-asan test-valgrind format format-check bench fuzz \
        demo clean charts-check image soak budget-model

all: build

deps:
	@scripts/install-deps

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo

$(ASAN_BUILD)/CMakeCache.txt:
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DTAU_SANITIZE=ON

build: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

asan: $(ASAN_BUILD)/CMakeCache.txt
	cmake --build $(ASAN_BUILD) -j $(JOBS)

# Every test in one tree: test-normal is the quick full run while working, test-asan the same
# under AddressSanitizer and UBSan.
test-normal: build
	cd $(BUILD) && ctest $(CTEST_ARGS) -j $(CTEST_JOBS)

test-asan: asan
	cd $(ASAN_BUILD) && $(SAN_ENV) ctest $(CTEST_ARGS) -j $(CTEST_JOBS)

# What CI runs (.ci/run): the format check, both trees built, then in the normal tree the tests
# that are not Python-driven (unit tests, fuzz-corpus replay, the programs' --help/--version:
# ctest -LE python) and in the sanitizer tree every test, so the unit tests and the replay run
# in both and each Python suite (end-to-end, kube-sim, charts, CRDs) once, where ASan and UBSan
# watch every daemon it starts. Each suite is one ctest test per TestCase class (or per test,
# for long standalone ones), so -j balances them; docs/PERFORMANCE.md has the timings.
test: deps
	$(MAKE) format-check
	$(MAKE) build asan
	cd $(BUILD) && ctest $(CTEST_ARGS) -j $(CTEST_JOBS) -LE python
	$(MAKE) test-asan

# memcheck over the agent, aggregator and CLI end-to-end flows (scripts/run-valgrind): every
# tau, tau-aggregator and tau-node-agent those suites start runs under valgrind with
# tests/valgrind/grpc.supp; an error or a definite/possible leak of ours fails the run. Slow
# (suites 4 to 12 times slower), so not part of `make test`. VALGRIND_SUITES="e2e/agent e2e/cli-team" picks others.
VALGRIND_SUITES ?=
test-valgrind: build
	python3 scripts/run-valgrind --build $(BUILD) $(foreach s,$(VALGRIND_SUITES),--suite $(s))

format:
	clang-format -i $(SOURCES)

format-check:
	@clang-format --dry-run --Werror $(SOURCES) && echo "format-check: clean"

# The Helm charts with the pinned helm and kubectl (.tools/bin) against kube-sim; also part of
# `make test` (ctest e2e/charts).
charts-check: deps
	python3 tests/e2e/test_charts.py

# The container image as an OCI layout in $(BUILD)/image/oci, without a container engine
# (scripts/build-image: mmdebstrap + umoci; root and the Debian mirror), then checked by
# unpacking it and running the binaries inside with chroot (tests/e2e/test_image.py).
image: deps build
	scripts/build-image $(BUILD)
	python3 tests/e2e/test_image.py $(BUILD)/image/oci

bench: build
	@scripts/run-bench $(BUILD)

# The fault soak (bench/soak.py, docs/PERFORMANCE.md): 5 minutes of API faults, node churn,
# workspace and team changes and 20 aggregator SIGKILLs, 200 agents, invariants checked from
# kube-sim's write history; exits 1 with the evidence when one broke. Not part of `make test`.
# SOAK_ARGS passes options, e.g. `make soak SOAK_ARGS="--duration 60 --kills 5 --seed 7"`.
SOAK_ARGS ?=
soak: deps build
	/usr/bin/python3 bench/soak.py --build $(BUILD) $(SOAK_ARGS)

# The team budget's randomized model test (tests/e2e/budget/model.py, docs/budget.md): `make test`
# runs 5 seeds (ctest e2e/budget-model); MODEL_ARGS passes options, e.g.
# `make budget-model MODEL_ARGS="--seeds 200"` or `MODEL_ARGS="--seed 7 --sequence '[...]'"`.
MODEL_ARGS ?=
budget-model: deps build
	/usr/bin/python3 tests/e2e/budget/model.py --build $(BUILD) $(MODEL_ARGS)

fuzz:
	CC=clang cmake -S . -B $(FUZZ_BUILD) -DCMAKE_BUILD_TYPE=Debug -DTAU_FUZZ=ON -DTAU_PYTHON_TESTS=OFF
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target fuzz-targets
	@scripts/run-fuzz $(FUZZ_BUILD) $(FUZZ_SECONDS)

# A simulated GPU cluster (kube-sim), real agents and aggregator, the CLI showing pool and
# workspaces; everything on 127.0.0.1, stopped on exit.
demo: deps build
	python3 scripts/demo.py --build $(BUILD)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
