# rmm_cargo_staticlib(TARGET <name> TARGET_DIR <dir> CUDA_MAJOR <12|13> [CPU <level>])
#
# Builds the staticlib of the C and C++ face (librmm_cpp.a, crate cpp/) with
# `cargo build --release -p rmm-cpp --no-default-features --features cuda-<CUDA_MAJOR>` (with
# RUSTFLAGS=-Ctarget-cpu=<CPU> where CPU is given) into TARGET_DIR and defines an imported static library <name>
# for it, plus the custom target <name>_cargo that runs cargo. The custom target is part of ALL, so `cmake --build` builds the staticlib (and the generated bridge
# headers that `cmake --install` installs) even with no example or test to link. cargo decides what
# to rebuild; the custom target runs it on every build (cheap when nothing changed) so Rust edits
# are always picked up.
function(rmm_cargo_staticlib)
  cmake_parse_arguments(ARG "" "TARGET;TARGET_DIR;CUDA_MAJOR;CPU" "" ${ARGN})
  find_program(RMM_CARGO cargo HINTS "$ENV{HOME}/.cargo/bin" REQUIRED)
  set(lib "${ARG_TARGET_DIR}/release/librmm_cpp.a")
  set(env CARGO_TARGET_DIR=${ARG_TARGET_DIR})
  if(ARG_CPU)
    list(APPEND env "RUSTFLAGS=$ENV{RUSTFLAGS} -Ctarget-cpu=${ARG_CPU}")
  endif()
  add_custom_target(${ARG_TARGET}_cargo ALL
    COMMAND ${CMAKE_COMMAND} -E env ${env}
            ${RMM_CARGO} build --release -p rmm-cpp --no-default-features --features cuda-${ARG_CUDA_MAJOR}
            --manifest-path "${PROJECT_SOURCE_DIR}/Cargo.toml"
    BYPRODUCTS "${lib}"
    WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}"
    COMMENT "cargo build --release -p rmm-cpp --features cuda-${ARG_CUDA_MAJOR} (librmm_cpp.a and the cxx bridge headers)"
    USES_TERMINAL)
  add_library(${ARG_TARGET} STATIC IMPORTED GLOBAL)
  set_target_properties(${ARG_TARGET} PROPERTIES IMPORTED_LOCATION "${lib}")
  # Users of the imported library depend on ${ARG_TARGET}_cargo (add_dependencies on the
  # INTERFACE target that links it), so cargo runs before anything links.
endfunction()
