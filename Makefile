# rmm-rs C++ face: the Rust staticlib, the examples and the C++ tests, built with nvcc.
#
#   make example             # the Rust staticlib and the Thrust sort example, and run it
#   make test                # cargo test (and model_scale in release), then every C++ example and
#                            # test built and run, and std-check
#   make valgrind            # every host test binary under valgrind (CI runs it)
#   make fuzz                # the pool's fuzz targets, FUZZ_SECONDS each (CI runs it)
#   make -j2                 # staticlib (cargo build --release), examples, tests -> build/cpp/bin
#   make run                 # ... and run them all (without a GPU they print "skipped: ...")
#   make std-check           # every public header in one TU, -std=c++17 and -std=c++20
#   make bundle              # build/cpp/bundle: what a machine without cargo needs to build
#
# Variables (override on the command line or in the environment):
#   CUDA_HOME         toolkit root: nvcc in bin/, cudart in lib/ (PyPI) or lib64/ (toolkit)
#   CCCL_INCLUDE      CCCL 3.5 headers; put first on the include path (a toolkit's own CCCL may be
#                     older: CUDA 13.0 ships 3.0.1)
#   CARGO_TARGET_DIR  where cargo puts librmm.a and the cxx bridge headers
#   NO_CARGO=1        do not run cargo; use RMM_LIB and CXXBRIDGE as given (e.g. from a bundle)
#   ARCH, CXX_STD     GPU architecture (sm_90: H100) and C++ standard (17 or 20)

REPO             := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
CUDA_HOME        ?= $(REPO)/.venv-cuda/lib/python3.11/site-packages/nvidia/cu13
NVCC             ?= $(CUDA_HOME)/bin/nvcc
CCCL_INCLUDE     ?= $(CUDA_HOME)/include/cccl
CARGO            ?= cargo
CARGO_TARGET_DIR ?= $(REPO)/target
RMM_LIB          ?= $(CARGO_TARGET_DIR)/release/librmm.a
CXXBRIDGE        ?= $(CARGO_TARGET_DIR)/cxxbridge
ARCH             ?= sm_90
CXX_STD          ?= 17
BUILD            ?= $(REPO)/build/cpp
BIN              := $(BUILD)/bin
OBJ              := $(BUILD)/obj

# GoogleTest: the system library if installed (Debian libgtest-dev), else built from the sources.
GTEST_SRC        ?= /usr/src/googletest/googletest
GTEST_LIB        ?= $(firstword $(wildcard /usr/lib/x86_64-linux-gnu/libgtest.a /usr/lib64/libgtest.a /usr/lib/libgtest.a))
ifeq ($(GTEST_LIB),)
GTEST_LIB        := $(BUILD)/gtest/libgtest.a
endif

INCLUDES   := -I$(CCCL_INCLUDE) -I$(REPO)/include -I$(CXXBRIDGE)
NVCCFLAGS  ?= -O2 -lineinfo
NVCCFLAGS  += -std=c++$(CXX_STD) -arch=$(ARCH) $(INCLUDES) -Xcompiler=-Wall,-Wno-unknown-pragmas -MMD -MP
# The Rust staticlib, then what it needs; cudart is static (nvcc's default).
LDLIBS     := $(RMM_LIB) -lpthread -ldl -L$(CUDA_HOME)/lib -L$(CUDA_HOME)/lib64

EXAMPLES   := $(patsubst $(REPO)/examples/%.cu,$(BIN)/%,$(wildcard $(REPO)/examples/*.cu))
TEST_SRCS  := $(wildcard $(REPO)/tests/cpp/*.cu $(REPO)/tests/cpp/*.cpp)
TEST_OBJS  := $(patsubst $(REPO)/tests/cpp/%,$(OBJ)/tests/%.o,$(TEST_SRCS))
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

# cargo decides whether anything changed; librmm.a keeps its time stamp when nothing did.
ifeq ($(NO_CARGO),)
staticlib:
	+CARGO_TARGET_DIR=$(CARGO_TARGET_DIR) $(CARGO) build --release --manifest-path $(REPO)/Cargo.toml
$(RMM_LIB): staticlib
endif

$(OBJ)/examples/%.o: $(REPO)/examples/%.cu | $(RMM_LIB)
	@mkdir -p $(@D)
	$(NVCC) $(NVCCFLAGS) -c $< -o $@

$(BIN)/%: $(OBJ)/examples/%.o $(RMM_LIB)
	@mkdir -p $(@D)
	$(NVCC) -arch=$(ARCH) $< -o $@ $(LDLIBS)

$(OBJ)/tests/%.o: $(REPO)/tests/cpp/% | $(RMM_LIB)
	@mkdir -p $(@D)
	$(NVCC) $(NVCCFLAGS) $(TEST_FLAGS) -x cu -c $< -o $@

$(TESTS): $(TEST_OBJS) $(RMM_LIB) $(GTEST_LIB)
	@mkdir -p $(@D)
	$(NVCC) -arch=$(ARCH) $(TEST_OBJS) -o $@ $(GTEST_LIB) $(LDLIBS)

# The GPU stress program (tests/stress): built and run with the rest; without a GPU it prints
# "skipped: no CUDA device". On the GPU machine: tests/stress/run_sanitizers.sh and its --help.
STRESS := $(BIN)/gpu_stress
all: $(STRESS)
run: run-stress
.PHONY: run-stress
run-stress: $(STRESS)
	$(STRESS)

$(OBJ)/stress/%.o: $(REPO)/tests/stress/%.cu | $(RMM_LIB)
	@mkdir -p $(@D)
	$(NVCC) $(NVCCFLAGS) -c $< -o $@

$(STRESS): $(OBJ)/stress/gpu_stress.o $(RMM_LIB)
	@mkdir -p $(@D)
	$(NVCC) -arch=$(ARCH) $< -o $@ $(LDLIBS)

$(OBJ)/exit_child/%.o: $(REPO)/tests/cpp/exit_child/%.cu | $(RMM_LIB)
	@mkdir -p $(@D)
	$(NVCC) $(NVCCFLAGS) -c $< -o $@

$(EXIT_CHILD): $(OBJ)/exit_child/rmm_exit_child.o $(RMM_LIB)
	@mkdir -p $(@D)
	$(NVCC) -arch=$(ARCH) $< -o $@ $(LDLIBS)

$(BUILD)/gtest/libgtest.a:
	@mkdir -p $(@D)
	g++ -std=c++17 -O2 -I$(GTEST_SRC)/include -I$(GTEST_SRC) -c $(GTEST_SRC)/src/gtest-all.cc -o $(BUILD)/gtest/gtest-all.o
	ar rcs $@ $(BUILD)/gtest/gtest-all.o

# The README's two commands.
example: $(BIN)/thrust_sort
	$(BIN)/thrust_sort
test: all
ifeq ($(NO_CARGO),)
	+CARGO_TARGET_DIR=$(CARGO_TARGET_DIR) $(CARGO) test --manifest-path $(REPO)/Cargo.toml
	+$(MAKE) --no-print-directory test-scale
endif
	$(MAKE) --no-print-directory run std-check

# The model-based tests at full scale: 10^7 checked calls per resource and adaptor in a release
# build (RMM_MODEL_OPS changes the count), with each test's seed and counts shown.
test-scale:
	+CARGO_TARGET_DIR=$(CARGO_TARGET_DIR) $(CARGO) test --release --manifest-path $(REPO)/Cargo.toml --test model_scale -- --show-output

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

# Every public header, once with each standard.
HEADERS := $(patsubst $(REPO)/include/%,%,$(shell find $(REPO)/include/rmm -name '*.hpp' -not -path '*/detail/*'))
std-check: | $(RMM_LIB)
	@mkdir -p $(OBJ)
	@printf '$(foreach h,$(HEADERS),#include <$(h)>\n)int main() { return 0; }\n' > $(OBJ)/all_headers.cu
	$(NVCC) $(filter-out -std=c++$(CXX_STD) -MMD -MP,$(NVCCFLAGS)) -std=c++17 -c $(OBJ)/all_headers.cu -o $(OBJ)/all_headers17.o
	$(NVCC) $(filter-out -std=c++$(CXX_STD) -MMD -MP,$(NVCCFLAGS)) -std=c++20 -c $(OBJ)/all_headers.cu -o $(OBJ)/all_headers20.o
	@echo "std-check: $(words $(HEADERS)) headers compile with -std=c++17 and -std=c++20"

# A self-contained tree for a machine without cargo (or without CCCL 3.5): this Makefile, the
# sources of the examples and tests, our headers with the generated bridge headers, the stripped
# staticlib and CCCL 3.5. Build and run there with
#   make -C bundle NO_CARGO=1 CUDA_HOME=/usr/local/cuda RMM_LIB=lib/librmm.a CXXBRIDGE=include CCCL_INCLUDE=cccl run
bundle: | $(RMM_LIB)
	rm -rf $(BUILD)/bundle && mkdir -p $(BUILD)/bundle/lib $(BUILD)/bundle/tests
	strip --strip-debug -o $(BUILD)/bundle/lib/librmm.a $(RMM_LIB)
	cp -r $(REPO)/include $(REPO)/examples $(REPO)/Makefile $(BUILD)/bundle/
	cp -r $(REPO)/tests/cpp $(REPO)/tests/stress $(BUILD)/bundle/tests/
	cp -rL $(CXXBRIDGE)/rust $(CXXBRIDGE)/rmm-rs $(BUILD)/bundle/include/
	rm -f $(BUILD)/bundle/include/rmm-rs/src/*.cc
	cp -r $(CCCL_INCLUDE) $(BUILD)/bundle/cccl
	@du -sh $(BUILD)/bundle

clean:
	rm -rf $(BUILD)

-include $(shell find $(OBJ) -name '*.d' 2>/dev/null)
