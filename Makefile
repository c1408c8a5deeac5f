# rmm-rs C++ face: the Rust staticlib, the examples and the C++ tests, built with nvcc.
#
# The Cargo workspace (one Cargo.lock): the core crate rmm-rs (src/) over the CUDA-free allocation
# algorithms rmm-algorithms (algorithms/), the C and C++ face rmm-cpp (cpp/: the cxx bridge and the
# legacy C API, building target/<profile>/librmm_cpp.a that every program here links), the legacy
# API's Rust functions rmm-legacy (cpp/legacy/), the replay tool rmm-replay (benches/replay/:
# target/<profile>/rmm_replay) and the Python face (python/, built by maturin only). `cargo build`
# and `cargo test` at the root build every member but python/.
#
#   make example             # the Rust staticlib and the Thrust sort example, and run it
#   make test                # the layering check (make layering), the SAFETY-comment check (make
#                            # safety-comments), cargo test of the workspace (and model_scale in
#                            # release), then every C++ example and test built and run,
#                            # std-check, and the Python tests; on all cores (-j$(nproc)) unless
#                            # given -j. Ends with one line: passed, failed and skipped for
#                            # Rust, C++ (GoogleTest) and Python (tests/tools/summary.sh)
#   make layering            # no two modules of a crate import each other; the driver uses nothing above it
#   make safety-comments     # every unsafe block of the Rust sources, tests included, has a // SAFETY: comment
#   make valgrind            # every host test binary under valgrind (CI runs it)
#   make fuzz                # the pool's fuzz targets, FUZZ_SECONDS each (CI runs it)
#   make python              # the Python wheel (python/, maturin) into .whl/, from a venv VENV_PY
#                            # (.venv-py) made with maturin, numpy and pytest from PyPI if missing
#   make python-test         # ... installed into VENV_PY, and pytest from python/tests (make test
#                            # runs it; GPU tests print their skip reason)
#   make python-typecheck    # the .pyi stubs against the extension (mypy.stubtest) and mypy --strict
#                            # on python/tests/typing/smoke.py, against that wheel (python-test runs it)
#   make wheels CUDA_MAJOR=13   # the wheel a user installs, rmm-rs-cu13 (or -cu12), into DIST_DIR (dist/)
#   make -j2                 # staticlib (cargo build --release -p rmm-cpp), examples, tests -> build/cpp/bin
#   make run                 # ... and run them all (without a GPU they print "skipped: ...")
#   make std-check           # every public header in one TU, -std=c++17 and -std=c++20, and
#                            # header-check: each of RMM 26.10's header paths alone
#   make bundle              # build/cpp/bundle: what a machine without cargo needs to build
#   make gpu-check GPU_REPEAT=20  # on a GPU host: every Rust test binary, the C++ tests, the
#                            # examples and the stress programs, GPU_REPEAT rounds (default 1)
#                            # (tests/gpu/check.sh; tests/gpu/README.md)
#   make gpu-sanitize        # on a GPU host: the same programs under compute-sanitizer memcheck,
#                            # racecheck, synccheck and initcheck (tests/stress/run_sanitizers.sh)
#
# Variables (override on the command line or in the environment):
#   CUDA_MAJOR        12 or 13: the CUDA major of everything built (nvcc, cudart, the cargo feature
#                     cuda-12 or cuda-13 of every crate); default: that of the nvcc chosen (see
#                     NVCC below), else 13. CUDA 12 builds go to their own folders
#                     (CARGO_TARGET_DIR target/cu12, BUILD build/cpp-cu12) unless given
#   CPU               the x86-64 level of all host code (Rust, nvcc's host compiler, C):
#                     x86-64 (the default: any x86-64 CPU), x86-64-v2, x86-64-v3, x86-64-v4 or
#                     native. Rust gets -Ctarget-cpu=CPU, the C and C++ compilers -march=CPU; after
#                     a change, make clean (make does not track flags; cargo does)
#   NVCC, CUDA_HOME   the CUDA toolkit: nvcc, or the root with nvcc in bin/ and cudart in lib64/
#                     (a toolkit) or lib/ (PyPI). Default: the first CUDA 12 or 13 nvcc of NVCC,
#                     CUDA_HOME, the PATH and /usr/local/cuda; with none, the pinned toolchain of
#                     CUDA_MAJOR (.venv-cuda, .venv-cuda12; installed there first)
#   CCCL_INCLUDE      CCCL 3.5 headers, put first on the include path. Default: the toolkit's own
#                     where it is 3.5 or newer, else CCCL 3.5 from PyPI (the nvidia-cuda-cccl wheel
#                     in .venv-cuda: CUDA 13.0 ships CCCL 3.0.1)
#   ARCH              GPU architectures: sm_90, a list ("sm_80 sm_90" or sm_80,sm_90: machine code
#                     for each and PTX of the newest), native, all or all-major. Default: those of
#                     the GPUs present; with no GPU, every architecture of the nvcc from sm_75
#                     (Turing) on and PTX of the newest (tools/cuda_toolchain.sh lists them)
#   CARGO_TARGET_DIR  where cargo puts librmm_cpp.a and the cxx bridge headers
#   NO_CARGO=1        do not run cargo; use RMM_LIB and CXXBRIDGE as given (e.g. from a bundle)
#   CXX_STD           C++ standard (17 or 20)
#
# Every goal that runs nvcc starts with one line saying which nvcc, which CCCL and which
# architectures it uses and why (tools/cuda_toolchain.sh). Where no usable nvcc or no CCCL 3.5 is
# found, it first says so and installs what is missing from PyPI into the repository
# (.ci/install-toolchain.sh cuda or cccl); nothing is installed outside the repository. make test
# also needs GoogleTest: where none is found it says so and installs Debian's libgtest-dev
# (apt-get, as root or through sudo -n) before anything else.

REPO             := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
# The toolkit, CCCL and GPU architectures: tools/cuda_toolchain.sh chooses them (its header says
# how) from what is given (NVCC, CUDA_HOME, CCCL_INCLUDE, CUDA_MAJOR, ARCH: on the command line or
# in the environment), and prints one line saying what it chose and why. Goals that never run
# nvcc only ask (no line, nothing installed); the others install what is missing into the
# repository's .venv-cuda (.venv-cuda12) first, after saying so; under make -n they only say so.
# A sub-make chooses again (cheaply) and prints the line only where its choice differs.
rmm_given         = $(if $(filter command% environment%,$(origin $(1))),$(1)='$($(1))')
rmm_no_nvcc_goals := clean fuzz print-cuda-major safety-comments layering test-scale staticlib python python-venv \
                     python-test wheels python-typecheck python-typecheck-installed gtest-check
rmm_needs_nvcc    := $(filter-out $(rmm_no_nvcc_goals),$(or $(MAKECMDGOALS),all))
rmm_dry_run       := $(findstring n,$(firstword -$(MAKEFLAGS)))
rmm_tc_mode       := $(if $(rmm_needs_nvcc),$(if $(rmm_dry_run),--dry-run,--install),--quiet)
rmm_tc_out        := $(shell $(foreach v,NVCC CUDA_HOME CCCL_INCLUDE CUDA_MAJOR ARCH,$(call rmm_given,$(v))) \
                       bash '$(REPO)/tools/cuda_toolchain.sh' --make $(rmm_tc_mode))
ifeq ($(rmm_tc_out),)
$(error rmm-rs: tools/cuda_toolchain.sh failed (its output is above))
endif
define rmm_newline


endef
$(eval $(subst |,$(rmm_newline),$(rmm_tc_out)))
ifneq ($(rmm_needs_nvcc),)
ifneq ($(rmm_tc_READY)$(rmm_dry_run),yes)
ifeq ($(rmm_dry_run),)
$(error rmm-rs: no usable nvcc or CCCL 3.5 after installing (see above): $(rmm_tc_SUMMARY))
endif
endif
endif
# What was chosen wins over what was given (a given toolkit that is too old is replaced).
override CUDA_MAJOR   := $(rmm_tc_CUDA_MAJOR)
override CUDA_HOME    := $(rmm_tc_CUDA_HOME)
override NVCC         := $(rmm_tc_NVCC)
override CCCL_INCLUDE := $(rmm_tc_CCCL_INCLUDE)
override ARCH         := $(rmm_tc_ARCH)
ARCH_FLAGS            := $(rmm_tc_ARCH_FLAGS)
# The library folder of the toolkit: lib64 in a toolkit, lib in the PyPI one.
CUDA_LIBDIR           := $(or $(rmm_tc_CUDA_LIBDIR),$(CUDA_HOME)/lib64)
export CUDA_MAJOR
export RMM_TOOLCHAIN_SHOWN := $(rmm_tc_SUMMARY)

CARGO            ?= cargo
CARGO_TARGET_DIR ?= $(REPO)/target$(if $(filter 12,$(CUDA_MAJOR)),/cu12)
# Every cargo and maturin call: the crates' feature of the CUDA major.
CARGO_FEATURES   := --no-default-features --features cuda-$(CUDA_MAJOR)
# The host CPU level: Rust through RUSTFLAGS (only where one is asked for, so that the default
# keeps a RUSTFLAGS of the environment and cargo's cache), C and C++ through -march.
CPU              ?= x86-64
CARGO_ENV        := CARGO_TARGET_DIR=$(CARGO_TARGET_DIR)$(if $(filter-out x86-64,$(CPU)), RUSTFLAGS="$$RUSTFLAGS -Ctarget-cpu=$(CPU)")
RMM_LIB          ?= $(CARGO_TARGET_DIR)/release/librmm_cpp.a
CXXBRIDGE        ?= $(CARGO_TARGET_DIR)/cxxbridge
CXX_STD          ?= 17
BUILD            ?= $(REPO)/build/cpp$(if $(filter 12,$(CUDA_MAJOR)),-cu12)
BIN              := $(BUILD)/bin
OBJ              := $(BUILD)/obj

# GoogleTest: the system library if installed (Debian libgtest-dev), else built from the sources.
GTEST_SRC        ?= /usr/src/googletest/googletest
GTEST_LIB        ?= $(firstword $(wildcard /usr/lib/x86_64-linux-gnu/libgtest.a /usr/lib64/libgtest.a /usr/lib/libgtest.a))
ifeq ($(GTEST_LIB),)
GTEST_LIB        := $(BUILD)/gtest/libgtest.a
endif

# The bridge headers as the C++ sources see them: a copy under $(BUILD), rewritten only when
# their text changes. cargo's own (target/cxxbridge) are links into the output folder of the
# profile built last, so each cargo test or build would otherwise date every C++ object.
ifeq ($(NO_CARGO),)
BRIDGE_INCLUDE := $(BUILD)/cxxbridge
else
BRIDGE_INCLUDE := $(CXXBRIDGE)
endif
INCLUDES   := -I$(CCCL_INCLUDE) -I$(REPO)/include -I$(BRIDGE_INCLUDE)
NVCCFLAGS  ?= -O2 -lineinfo
NVCCFLAGS  += -std=c++$(CXX_STD) $(ARCH_FLAGS) $(INCLUDES) -Xcompiler=-Wall,-Wno-unknown-pragmas,-march=$(CPU) -MMD -MP
# The Rust staticlib, then what it needs; cudart is static (nvcc's default).
LDLIBS     := $(RMM_LIB) -lpthread -ldl -L$(CUDA_LIBDIR)
# nvcc, CCCL and the architectures the objects were built with: rewritten when they change, so
# that every nvcc object and program is rebuilt for a new choice (make tracks no flags itself).
TOOLCHAIN_STAMP := $(BUILD)/toolchain
rmm_stamp_text  := $(NVCC) $(CCCL_INCLUDE) $(ARCH_FLAGS)
ifneq ($(rmm_needs_nvcc),)
ifeq ($(rmm_dry_run),)
$(shell mkdir -p '$(BUILD)' && { [ "$$(cat '$(TOOLCHAIN_STAMP)' 2>/dev/null)" = '$(rmm_stamp_text)' ] || \
          printf '%s\n' '$(rmm_stamp_text)' > '$(TOOLCHAIN_STAMP)'; })
endif
endif
$(TOOLCHAIN_STAMP):
	@mkdir -p $(@D) && printf '%s\n' '$(rmm_stamp_text)' > $@

EXAMPLES   := $(patsubst $(REPO)/examples/%.cu,$(BIN)/%,$(wildcard $(REPO)/examples/*.cu))
# The test sources in batches of TEST_BATCH_SIZE, each batch one translation unit
# (tests/cpp/unity_batches.sh says why); TEST_BATCH_SIZE=1 builds one object per source.
TEST_BATCH_SIZE ?= 16
TEST_BATCHES := $(shell bash $(REPO)/tests/cpp/unity_batches.sh $(OBJ)/tests/batches $(TEST_BATCH_SIZE) \
                  $(sort $(wildcard $(REPO)/tests/cpp/*.cu)))
TEST_OBJS  := $(TEST_BATCHES:.cu=.o) $(OBJ)/tests/main.cpp.o
TESTS      := $(BIN)/rmm_cpp_tests
# A program that ends with resources alive; process_exit_test.cu runs it next to rmm_cpp_tests.
EXIT_CHILD := $(BIN)/rmm_exit_child
# GoogleTest's TEST() inside an anonymous namespace trips nvcc's "declared but never referenced".
TEST_FLAGS := -I$(GTEST_SRC)/include -diag-suppress=177

# Keep object files (make would delete them as intermediates of the pattern chain).
.SECONDARY:
.PHONY: all examples tests run run-examples run-tests std-check staticlib bundle clean example test test-scale valgrind fuzz
all: examples tests
examples: $(EXAMPLES)
tests: $(TESTS) $(EXIT_CHILD)

# cargo decides whether anything changed; librmm_cpp.a keeps its time stamp when nothing did.
ifeq ($(NO_CARGO),)
staticlib:
	+$(CARGO_ENV) $(CARGO) build --release -p rmm-cpp $(CARGO_FEATURES) --manifest-path $(REPO)/Cargo.toml
	@bash $(REPO)/tests/cpp/stage_bridge_headers.sh $(CXXBRIDGE) $(BRIDGE_INCLUDE)
$(RMM_LIB): staticlib
endif

$(OBJ)/examples/%.o: $(REPO)/examples/%.cu $(TOOLCHAIN_STAMP) | $(RMM_LIB)
	@mkdir -p $(@D)
	$(NVCC) $(NVCCFLAGS) -c $< -o $@

$(BIN)/%: $(OBJ)/examples/%.o $(RMM_LIB) $(TOOLCHAIN_STAMP)
	@mkdir -p $(@D)
	$(NVCC) $(ARCH_FLAGS) $< -o $@ $(LDLIBS)

$(OBJ)/tests/%.o: $(REPO)/tests/cpp/% $(TOOLCHAIN_STAMP) | $(RMM_LIB)
	@mkdir -p $(@D)
	$(NVCC) $(NVCCFLAGS) $(TEST_FLAGS) -x cu -c $< -o $@

$(OBJ)/tests/batches/%.o: $(OBJ)/tests/batches/%.cu $(TOOLCHAIN_STAMP) | $(RMM_LIB)
	$(NVCC) $(NVCCFLAGS) $(TEST_FLAGS) -c $< -o $@

$(TESTS): $(TEST_OBJS) $(RMM_LIB) $(GTEST_LIB) $(TOOLCHAIN_STAMP)
	@mkdir -p $(@D)
	$(NVCC) $(ARCH_FLAGS) $(TEST_OBJS) -o $@ $(GTEST_LIB) $(LDLIBS)

# The GPU stress programs (tests/stress/*.cu but stream_order_probe.cu, a probe built by hand):
# built and run with the rest; without a GPU they print "skipped: no CUDA device". On a GPU
# machine: make gpu-check and make gpu-sanitize (below).
STRESS := $(patsubst $(REPO)/tests/stress/%.cu,$(BIN)/%,$(filter-out %/stream_order_probe.cu,$(wildcard $(REPO)/tests/stress/*.cu)))
all: $(STRESS)
run: run-stress
.PHONY: run-stress
run-stress: $(STRESS)
	@status=0; for b in $(STRESS); do echo "== $$b"; $$b || { echo "FAILED: $$b"; status=1; }; done; exit $$status

$(OBJ)/stress/%.o: $(REPO)/tests/stress/%.cu $(TOOLCHAIN_STAMP) | $(RMM_LIB)
	@mkdir -p $(@D)
	$(NVCC) $(NVCCFLAGS) -c $< -o $@

$(STRESS): $(BIN)/%: $(OBJ)/stress/%.o $(RMM_LIB) $(TOOLCHAIN_STAMP)
	@mkdir -p $(@D)
	$(NVCC) $(ARCH_FLAGS) $< -o $@ $(LDLIBS)

$(OBJ)/exit_child/%.o: $(REPO)/tests/cpp/exit_child/%.cu $(TOOLCHAIN_STAMP) | $(RMM_LIB)
	@mkdir -p $(@D)
	$(NVCC) $(NVCCFLAGS) -c $< -o $@

$(EXIT_CHILD): $(OBJ)/exit_child/rmm_exit_child.o $(RMM_LIB) $(TOOLCHAIN_STAMP)
	@mkdir -p $(@D)
	$(NVCC) $(ARCH_FLAGS) $< -o $@ $(LDLIBS)

# The legacy C API (include/rmm/rmm.h) from plain C: the example and the C test, built with the C
# compiler (not nvcc) against librmm_cpp.a and the CUDA runtime (they fill memory with cudaMemcpy and
# cudaMemset, as a C program of the original RMM would); c-header-check compiles rmm.h as C11 and
# as C++17/20 without CUDA headers.
C_PROGRAMS := $(patsubst $(REPO)/examples/c/%.c,$(BIN)/%,$(wildcard $(REPO)/examples/c/*.c)) \
              $(patsubst $(REPO)/tests/c/%.c,$(BIN)/%,$(wildcard $(REPO)/tests/c/*.c))
C_LDLIBS   := $(RMM_LIB) -L$(CUDA_LIBDIR) -l:libcudart_static.a -lrt -lstdc++ -lpthread -ldl -lm
C_FLAGS    := -std=c11 -O2 -march=$(CPU) -Wall -Wextra -pedantic -I$(REPO)/include
C_PROG_FLAGS := $(C_FLAGS) -I$(CUDA_HOME)/include
all: $(C_PROGRAMS)
run: run-c
.PHONY: run-c c-header-check
run-c: $(C_PROGRAMS)
	@status=0; for b in $(C_PROGRAMS); do echo "== $$b"; $$b || { echo "FAILED: $$b"; status=1; }; done; exit $$status
$(BIN)/%: $(REPO)/examples/c/%.c $(RMM_LIB) $(REPO)/include/rmm/rmm.h $(REPO)/include/rmm/rmm_api.h
	@mkdir -p $(@D)
	$(CC) $(C_PROG_FLAGS) $< -o $@ $(C_LDLIBS)
$(BIN)/%: $(REPO)/tests/c/%.c $(RMM_LIB) $(REPO)/include/rmm/rmm.h $(REPO)/include/rmm/rmm_api.h
	@mkdir -p $(@D)
	$(CC) $(C_PROG_FLAGS) $< -o $@ $(C_LDLIBS)
std-check: c-header-check
c-header-check:
	@mkdir -p $(OBJ)
	@printf '#include <rmm/rmm.h>\n#include <rmm/rmm.h>\nint main(void) { return rmmIsInitialized(NULL); }\n' > $(OBJ)/c_api_header.c
	$(CC) $(C_FLAGS) -fsyntax-only $(OBJ)/c_api_header.c
	g++ -std=c++17 -Wall -Wextra -pedantic -I$(REPO)/include -fsyntax-only -x c++ $(OBJ)/c_api_header.c
	g++ -std=c++20 -Wall -Wextra -pedantic -I$(REPO)/include -fsyntax-only -x c++ $(OBJ)/c_api_header.c
	@echo "c-header-check: rmm.h and rmm_api.h compile as C11, C++17 and C++20"

$(BUILD)/gtest/libgtest.a:
	@test -f $(GTEST_SRC)/src/gtest-all.cc || { echo "rmm-rs: the C++ tests need GoogleTest: no libgtest.a installed and no sources in GTEST_SRC=$(GTEST_SRC). Install Debian's libgtest-dev (make test offers to), or give GTEST_SRC=<googletest>/googletest"; exit 1; }
	@mkdir -p $(@D)
	g++ -std=c++17 -O2 -march=$(CPU) -I$(GTEST_SRC)/include -I$(GTEST_SRC) -c $(GTEST_SRC)/src/gtest-all.cc -o $(BUILD)/gtest/gtest-all.o
	ar rcs $@ $(BUILD)/gtest/gtest-all.o

# The README's two commands. `make test` runs on all cores unless given -j (or run under a make
# that has a job server): the builds share make's job slots with cargo; the test programs then run
# one at a time, so that their output stays in order.
NPROC := $(shell nproc 2>/dev/null || echo 2)
example: $(BIN)/thrust_sort
	$(BIN)/thrust_sort
.PHONY: test-steps print-cuda-major gtest-check
print-cuda-major:
	@echo $(CUDA_MAJOR)
# GoogleTest for the C++ tests: the system's (Debian's libgtest-dev: a library or its sources);
# where neither is there, make test says so and installs libgtest-dev with apt-get (as root, or
# through sudo without a password) before anything else, and stops where it cannot.
gtest-check:
	@if [ -z "$(filter-out $(BUILD)/gtest/libgtest.a,$(GTEST_LIB))" ] && [ ! -f $(GTEST_SRC)/src/gtest-all.cc ]; then \
	  echo "rmm-rs: make test needs GoogleTest (for the C++ tests): none in /usr/lib or $(GTEST_SRC); installing Debian's libgtest-dev with apt-get (bash .ci/install-toolchain.sh gtest)"; \
	  bash $(REPO)/.ci/install-toolchain.sh gtest; \
	  if [ ! -f /usr/lib/x86_64-linux-gnu/libgtest.a ] && [ ! -f $(GTEST_SRC)/src/gtest-all.cc ]; then \
	    echo "rmm-rs: still no GoogleTest: install libgtest-dev (or googletest's sources and give GTEST_SRC=<googletest>/googletest), then make test again"; exit 1; fi; \
	fi
# The steps' output goes to the terminal and to a log, from which tests/tools/summary.sh prints the
# closing line (passed, failed, skipped per runner); make test exits with the steps' status.
test: gtest-check
	+@case " $$MAKEFLAGS " in *jobserver*|*" -j"*) jobs= ;; *) jobs=-j$(NPROC) ;; esac; \
	  echo "rmm-rs: make test$${jobs:+ $$jobs} (CUDA $(CUDA_MAJOR), CPU $(CPU))"; \
	  log=$$(mktemp); \
	  { $(MAKE) --no-print-directory $$jobs test-steps 2>&1; echo $$? > "$$log.status"; } | tee "$$log"; \
	  status=$$(cat "$$log.status"); \
	  bash $(REPO)/tests/tools/summary.sh "$$log"; \
	  rm -f "$$log" "$$log.status"; \
	  exit $$status
test-steps: all layering safety-comments
ifeq ($(NO_CARGO),)
	+$(CARGO_ENV) $(CARGO) test $(CARGO_FEATURES) --manifest-path $(REPO)/Cargo.toml
	+$(MAKE) --no-print-directory test-scale
endif
	+$(MAKE) --no-print-directory std-check
	$(MAKE) --no-print-directory -j1 run
	+$(MAKE) --no-print-directory python-test

# No two modules of a crate import each other, and the driver door uses nothing above it
# (tests/tools/module_cycles.py, and its own tests); the allocation algorithms (rmm-algorithms)
# depend on no CUDA crate, so that Cargo, not discipline, keeps CUDA out of them.
LAYERED := src algorithms/src cpp/src cpp/legacy/src python/src benches/replay/src
.PHONY: layering
layering:
	python3 -m unittest -q $(REPO)/tests/tools/test_module_cycles.py
	cd $(REPO) && python3 tests/tools/module_cycles.py $(LAYERED)
	@cd $(REPO) && deps=$$(cargo tree -p rmm-algorithms -e normal --prefix none --offline 2>/dev/null || cargo tree -p rmm-algorithms -e normal --prefix none); \
	  if echo "$$deps" | grep -q '^cudarc '; then echo "layering: rmm-algorithms depends on cudarc: the algorithms must not see CUDA"; exit 1; fi; \
	  echo "layering: rmm-algorithms depends on no CUDA crate ($$(echo "$$deps" | sed 1d | cut -d' ' -f1 | sort -u | tr '\n' ' '))"

# Every unsafe block of the repository's Rust, library, tests, benchmarks, fuzz targets and
# examples alike, has a `// SAFETY:` comment above it or above the statement that holds it
# (tests/tools/safety_comments.py, and its own tests). `cargo clippy` checks the same through
# the workspace lint clippy::undocumented_unsafe_blocks.
SAFETY_CHECKED := src algorithms cpp python benches tests fuzz examples
.PHONY: safety-comments
safety-comments:
	python3 -m unittest -q $(REPO)/tests/tools/test_safety_comments.py
	cd $(REPO) && python3 tests/tools/safety_comments.py $(SAFETY_CHECKED)

# The model-based tests at full scale: 10^7 checked calls per resource and adaptor in a release
# build (RMM_MODEL_OPS changes the count), with each test's seed and counts shown.
test-scale:
	+$(CARGO_ENV) $(CARGO) test $(CARGO_FEATURES) --release --manifest-path $(REPO)/Cargo.toml --test model_scale -- --show-output

# Every host test binary (cargo's and the C++ tests) under valgrind; the fuzz targets for
# FUZZ_SECONDS each. CI runs both after `make test`.
FUZZ_SECONDS ?= 30
valgrind: tests
	CARGO_TARGET_DIR=$(CARGO_TARGET_DIR) BUILD=$(BUILD) bash $(REPO)/.ci/valgrind.sh
fuzz:
	bash $(REPO)/.ci/fuzz.sh $(FUZZ_SECONDS)

run: run-examples run-tests
run-examples: examples
	@status=0; for b in $(EXAMPLES); do echo "== $$b"; $$b || { echo "FAILED: $$b"; status=1; }; done; exit $$status
run-tests: tests
	$(TESTS)

# Every public header, once with each standard (for one architecture: a compile check).
STD_CHECK_FLAGS := $(filter-out -std=c++$(CXX_STD) -MMD -MP -gencode arch=% -arch=%,$(NVCCFLAGS)) -arch=$(rmm_tc_ARCH_ONE)
HEADERS := $(patsubst $(REPO)/include/%,%,$(shell find $(REPO)/include/rmm -name '*.hpp' -not -path '*/detail/*'))
std-check: | $(RMM_LIB)
	@mkdir -p $(OBJ)
	@printf '$(foreach h,$(HEADERS),#include <$(h)>\n)int main() { return 0; }\n' > $(OBJ)/all_headers.cu
	$(NVCC) $(STD_CHECK_FLAGS) -std=c++17 -c $(OBJ)/all_headers.cu -o $(OBJ)/all_headers17.o
	$(NVCC) $(STD_CHECK_FLAGS) -std=c++20 -c $(OBJ)/all_headers.cu -o $(OBJ)/all_headers20.o
	@echo "std-check: $(words $(HEADERS)) headers compile with -std=c++17 and -std=c++20"

# RMM 26.10's header paths (tests/cpp/rmm_26_10_headers.txt): each exists under include/ and
# compiles alone with nvcc (-std=c++17) and, where RMM's does, the host compiler (-std=c++20);
# all of them together with nvcc -std=c++20.
.PHONY: header-check
std-check: header-check
header-check: | $(RMM_LIB)
	NVCC='$(NVCC)' INCLUDES='$(INCLUDES)' ARCH='$(rmm_tc_ARCH_ONE)' CUDA_INCLUDE='$(CUDA_HOME)/include' WORK='$(OBJ)/header_check' bash $(REPO)/tests/cpp/check_headers.sh

# A self-contained tree for a machine without cargo (or without CCCL 3.5): this Makefile, the
# sources of the examples and tests, our headers with the generated bridge headers, the stripped
# staticlib and CCCL 3.5. Build and run there with
#   make -C bundle NO_CARGO=1 CUDA_HOME=/usr/local/cuda RMM_LIB=lib/librmm_cpp.a CXXBRIDGE=include CCCL_INCLUDE=cccl run
bundle: | $(RMM_LIB)
	rm -rf $(BUILD)/bundle && mkdir -p $(BUILD)/bundle/lib $(BUILD)/bundle/tests
	strip --strip-debug -o $(BUILD)/bundle/lib/librmm_cpp.a $(RMM_LIB)
	cp -r $(REPO)/include $(REPO)/examples $(REPO)/Makefile $(REPO)/tools $(BUILD)/bundle/
	cp -r $(REPO)/tests/cpp $(REPO)/tests/stress $(BUILD)/bundle/tests/
	cp -rL $(CXXBRIDGE)/rust $(CXXBRIDGE)/rmm-rs $(BUILD)/bundle/include/
	rm -f $(BUILD)/bundle/include/rmm-rs/src/*.cc
	cp -r $(CCCL_INCLUDE) $(BUILD)/bundle/cccl
	@du -sh $(BUILD)/bundle

clean:
	rm -rf $(BUILD)

-include $(shell find $(OBJ) -name '*.d' 2>/dev/null)

# On a GPU host: every test program built (cargo test --release --no-run and make all) and
# collected in GPU_BIN (tests/gpu/package.sh --no-strip), then run GPU_REPEAT rounds
# (tests/gpu/check.sh; LOGS, RMM_MODEL_OPS, CHECK_TIMEOUT from the environment) or under
# compute-sanitizer (tests/stress/run_sanitizers.sh; TOOLS, JOBS, SANITIZER_TIMEOUT, LOGS, PRINT_LIMIT). A
# machine without cargo runs the two scripts on a folder made by tests/gpu/package.sh elsewhere.
GPU_REPEAT ?= 1
GPU_BIN    ?= $(REPO)/build/gpu
.PHONY: gpu-bin gpu-check gpu-sanitize
ifeq ($(NO_CARGO),)
gpu-bin: all
	+$(CARGO_ENV) BUILD=$(BUILD) ARCH='$(ARCH)' CARGO=$(CARGO) CUDA_HOME=$(CUDA_HOME) CCCL_INCLUDE=$(CCCL_INCLUDE) \
	  bash $(REPO)/tests/gpu/package.sh --out $(GPU_BIN) --no-strip
else
gpu-bin:
	@echo "gpu-check and gpu-sanitize build the Rust tests with cargo; without it, run tests/gpu/check.sh --bin DIR on a folder made by tests/gpu/package.sh (tests/gpu/README.md)"; exit 1
endif
gpu-check: gpu-bin
	bash $(REPO)/tests/gpu/check.sh --bin $(GPU_BIN) --repeat $(GPU_REPEAT)
gpu-sanitize: gpu-bin
	bash $(REPO)/tests/stress/run_sanitizers.sh $(GPU_BIN)/cpp $(GPU_BIN)/rust

# The Python package (python/: PyO3 + maturin, pure Rust, no CUDA needed to build): the wheel in
# WHEEL_DIR, built from a venv VENV_PY that is created with PYTHON3 when missing (maturin 1.16,
# numpy, pytest, and distributed and dask for test_dask.py's host tests, from PyPI). python-test
# installs the wheel into that venv and runs pytest from python/tests (there python/rmm, the
# sources without the native module, is not on the path).
PYTHON3   ?= python3
VENV_PY   ?= $(REPO)/.venv-py
WHEEL_DIR ?= $(REPO)/.whl
.PHONY: python python-venv python-install python-test
python-venv: $(VENV_PY)/bin/maturin
$(VENV_PY)/bin/maturin:
	@echo "rmm-rs: the Python package needs maturin, numpy, pytest, dask and distributed: a venv $(VENV_PY) from PyPI"
	$(PYTHON3) -m venv $(VENV_PY)
	$(VENV_PY)/bin/pip install -q --disable-pip-version-check 'maturin>=1.16,<1.17' numpy pytest \
	  'distributed==2026.7.1' 'dask==2026.7.1'
python: python-venv
	@mkdir -p $(WHEEL_DIR)
	rm -f $(WHEEL_DIR)/rmm_rs-*.whl
	cd $(REPO)/python && $(CARGO_ENV) $(VENV_PY)/bin/maturin build --release $(CARGO_FEATURES) --interpreter $(VENV_PY)/bin/python -o $(WHEEL_DIR)
# The wheel just built, installed into VENV_PY (what the Python tests, the stub checks and the
# Python reference read).
python-install: python
	$(VENV_PY)/bin/pip install -q --disable-pip-version-check --no-deps --force-reinstall $(WHEEL_DIR)/rmm_rs-*.whl
python-test: python-install
	cd $(REPO)/python/tests && $(VENV_PY)/bin/python -m pytest -q -rs
	+$(MAKE) --no-print-directory python-typecheck-installed

# The type information (the .pyi stubs beside the modules, and py.typed), checked against the
# wheel installed in VENV_PY: mypy.stubtest imports each stubbed module (no GPU needed) and compares
# the stubs with what the extension has (python/tests/typing/stubtest_allowlist.txt: the meant
# differences); mypy --strict checks python/tests/typing/smoke.py, the API used as a user would.
MYPY_VERSION ?= 2.4.1
MYPY_CACHE   ?= $(REPO)/build/mypy-cache
# Every module with a stub (python/rmm/**/*.pyi).
STUBBED      := $(sort $(subst /,.,$(patsubst $(REPO)/python/%.pyi,%,$(shell find $(REPO)/python/rmm -name '*.pyi'))))
.PHONY: python-typecheck python-typecheck-installed wheels
python-typecheck: python-install
	+$(MAKE) --no-print-directory python-typecheck-installed
python-typecheck-installed: $(VENV_PY)/bin/mypy
	cd $(REPO)/python/tests/typing && $(VENV_PY)/bin/python -m mypy.stubtest --mypy-config-file mypy.ini \
	  --allowlist stubtest_allowlist.txt $(STUBBED)
	cd $(REPO)/python/tests/typing && $(VENV_PY)/bin/python -m mypy --strict --config-file mypy.ini \
	  --cache-dir $(MYPY_CACHE) smoke.py
$(VENV_PY)/bin/mypy: | $(VENV_PY)/bin/maturin
	$(VENV_PY)/bin/pip install -q --disable-pip-version-check 'mypy==$(MYPY_VERSION)'

# The API references, warnings denied: the Rust one (cargo doc, every crate of the workspace) in
# DOCS_DIR/rust, the Python one (pdoc, from the installed wheel's docstrings and .pyi stubs:
# python/tools/api_docs.py) in DOCS_DIR/python. Open DOCS_DIR/rust/rmm/index.html and
# DOCS_DIR/python/index.html.
DOCS_DIR     ?= $(REPO)/build/docs
PDOC_VERSION ?= 16.0.0
.PHONY: docs
docs: python-install $(VENV_PY)/bin/pdoc
	cd $(REPO) && RUSTDOCFLAGS="-D warnings" PYO3_PYTHON=$(VENV_PY)/bin/python $(CARGO_ENV) cargo doc --workspace --no-deps --quiet
	rm -rf $(DOCS_DIR)/rust $(DOCS_DIR)/python && mkdir -p $(DOCS_DIR)
	cp -r $(CARGO_TARGET_DIR)/doc $(DOCS_DIR)/rust
	cd $(REPO)/build && $(VENV_PY)/bin/python $(REPO)/python/tools/api_docs.py $(DOCS_DIR)/python
	@echo "rmm-rs: API references in $(DOCS_DIR)/rust/rmm/index.html and $(DOCS_DIR)/python/index.html"
# The stubs import typing_extensions (mypy brings it for python-typecheck; docs may run first).
$(VENV_PY)/bin/pdoc: | $(VENV_PY)/bin/maturin
	$(VENV_PY)/bin/pip install -q --disable-pip-version-check 'pdoc==$(PDOC_VERSION)' typing_extensions

# The wheel a user installs, one per CUDA major: distribution rmm-rs-cu13 or rmm-rs-cu12, import
# name rmm, with the stubs and py.typed; maturin builds it (release) as rmm-rs and
# python/tools/name_wheel.py renames it into DIST_DIR. WHEEL_CUDA_MAJOR follows CUDA_MAJOR
# (default 13), and the Python crate is built with its feature cuda-<major>. One abi3 wheel serves
# CPython 3.10 and newer; its manylinux tag is the glibc its symbols need.
DIST_DIR              ?= $(REPO)/dist
WHEEL_CUDA_MAJOR      ?= $(or $(CUDA_MAJOR),13)
wheel_stage            = $(REPO)/build/wheel-cu$(WHEEL_CUDA_MAJOR)
wheels: python-venv
	@case '$(WHEEL_CUDA_MAJOR)' in 12|13) ;; *) echo "wheels: CUDA_MAJOR must be 12 or 13, not '$(WHEEL_CUDA_MAJOR)'" >&2; exit 1;; esac
	rm -rf $(wheel_stage) && mkdir -p $(wheel_stage) $(DIST_DIR)
	cd $(REPO)/python && $(CARGO_ENV) $(VENV_PY)/bin/maturin build --release --interpreter $(VENV_PY)/bin/python \
	  --no-default-features --features cuda-$(WHEEL_CUDA_MAJOR) -o $(wheel_stage)
	rm -f $(DIST_DIR)/rmm_rs_cu$(WHEEL_CUDA_MAJOR)-*.whl
	$(VENV_PY)/bin/python $(REPO)/python/tools/name_wheel.py $(wheel_stage)/rmm_rs-*.whl rmm-rs-cu$(WHEEL_CUDA_MAJOR) $(DIST_DIR)
