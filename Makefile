# Thin wrapper over CMake presets. The real build lives in CMakeLists.txt.
#   make test    install what is missing, then build and run every test in the
#                default, asan (ASan+UBSan) and tsan builds, and the stress
#                suites once more with fault injection at every atomic step,
#                and each flavour's libFuzzer target for 30 s against its model;
#                then the fast planted bugs (scripts/mutants.sh --fast), each of
#                which must be caught
#   make bench   build and run the flavour comparison; results in build/bench/
#   make bench-pool, make bench-exec   the pool's and the executor's comparisons
#   make bench-ipc   channels between processes against pipes, sockets, mqueues
#   make build   the default build only (library, tests, benchmarks, examples);
#                needs only BUILD_DEPS

JOBS      ?= $(shell nproc)
PRESETS   ?= default asan tsan faults fuzz
BUILD_DEPS = cmake make gcc g++ pkg-config check
TEST_DEPS  = $(BUILD_DEPS) clang spin groff-base
BENCH_DEPS = libck-dev libboost-dev libtbb-dev libglib2.0-dev liburcu-dev \
             libconcurrentqueue-dev libreaderwriterqueue-dev libatomic-queue-dev \
             libxenium-dev librust-crossbeam-channel-dev librust-flume-dev rustc cargo \
             golang-go gnuplot-nox libomp-dev
BENCH_ARGS ?=

.PHONY: all build test bench bench-pool bench-exec bench-ipc deps build-deps bench-deps clean
# test-default, test-asan, test-tsan: one build each. Not .PHONY on purpose:
# make skips pattern rules for phony targets.

all: build

build-deps:
	@sh scripts/install-deps.sh $(BUILD_DEPS)

deps:
	@sh scripts/install-deps.sh $(TEST_DEPS)

bench-deps: deps
	@sh scripts/install-deps.sh $(BENCH_DEPS)

build: build-deps
	cmake --preset default >/dev/null
	cmake --build --preset default -j $(JOBS)

# Each test appends what it checked to build/<preset>/accounted.txt
# (SL_ACCOUNT_FILE, tests/harness.h); the summary adds them up at the end.
# ctest runs the stress suites (and the model checks, the benchmark and
# example runs) one at a time: they start threads of their own, and the
# stress suites' hunt needs the cores. The unit suites (label "unit": short
# cases, mostly one thread or sleeping on time-outs) run JOBS at once first,
# which halves their time under the sanitizers. In the fuzz preset, each
# libFuzzer target is one thread fuzzing for a fixed wall-clock time, so
# JOBS of them at once each keep a core and the time they were given, and
# the preset takes a JOBS-th of the time. The faults preset runs only the
# stress suites (its test preset says so).
test: deps
	@set -e; for p in $(PRESETS); do \
	    echo "==== $$p build ===="; \
	    cmake --preset $$p >/dev/null; \
	    cmake --build --preset $$p -j $(JOBS); \
	    rm -f build/$$p/accounted.txt; \
	    $(MAKE) --no-print-directory ctest-$$p; \
	done; \
	sh scripts/test-summary.sh $(foreach p,$(PRESETS),build/$(p)/accounted.txt); \
	echo "==== planted bugs (scripts/mutants.sh --fast) ===="; \
	JOBS=$(JOBS) bash scripts/mutants.sh --fast

test-%: deps
	@echo "==== $* build ===="
	cmake --preset $* >/dev/null
	cmake --build --preset $* -j $(JOBS)
	rm -f build/$*/accounted.txt
	@$(MAKE) --no-print-directory ctest-$*
	@sh scripts/test-summary.sh build/$*/accounted.txt

# ctest-<preset>: the tests of a built preset, scheduled as `test` says.
ctest-%:
	@set -e; acc=$(CURDIR)/build/$*/accounted.txt; \
	case $* in \
	fuzz) SL_ACCOUNT_FILE=$$acc ctest --preset $* -j $(JOBS) ;; \
	faults) SL_ACCOUNT_FILE=$$acc ctest --preset $* -j 1 ;; \
	*) SL_ACCOUNT_FILE=$$acc ctest --preset $* -L unit -j $(JOBS); \
	   SL_ACCOUNT_FILE=$$acc ctest --preset $* -LE unit -j 1 ;; \
	esac

bench: bench-deps
	cmake --preset default >/dev/null
	cmake --build --preset default -j $(JOBS) --target sl-bench
	@mkdir -p build/bench
	./build/default/bench/sl-bench chan --csv build/bench/chan.csv \
	    --plot build/bench/chan.png $(BENCH_ARGS) | tee build/bench/chan.txt

bench-pool bench-exec bench-ipc: bench-%: bench-deps
	cmake --preset default >/dev/null
	cmake --build --preset default -j $(JOBS) --target sl-bench
	@mkdir -p build/bench
	./build/default/bench/sl-bench $* --csv build/bench/$*.csv $(BENCH_ARGS) \
	    | tee build/bench/$*.txt

clean:
	rm -rf build
