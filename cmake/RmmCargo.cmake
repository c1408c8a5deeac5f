# rmm_cargo_staticlib(TARGET <name> TARGET_DIR <dir>)
#
# Builds the staticlib of the C and C++ face (librmm_cpp.a, crate cpp/) with
# `cargo build --release -p rmm-cpp` into TARGET_DIR and defines an imported static library <name>
# for it, plus the custom target <name>_cargo that runs cargo. The custom target is part of ALL, so `cmake --build` builds the staticlib (and the generated bridge
# headers that `cmake --install` installs) even with no example or test to link. cargo decides what
# to rebuild; the custom target runs it on every build (cheap when nothing changed) so Rust edits
# are always picked up.
function(rmm_cargo_staticlib)
  cmake_parse_arguments(ARG "" "TARGET;TARGET_DIR" "" ${ARGN})
  find_program(RMM_CARGO cargo HINTS "$ENV{HOME}/.cargo/bin" REQUIRED)
  set(lib "${ARG_TARGET_DIR}/release/librmm_cpp.a")
  add_custom_target(${ARG_TARGET}_cargo ALL
    COMMAND ${CMAKE_COMMAND} -E env CARGO_TARGET_DIR=${ARG_TARGET_DIR}
            ${RMM_CARGO} build --release -p rmm-cpp --manifest-path "${PROJECT_SOURCE_DIR}/Cargo.toml"
    BYPRODUCTS "${lib}"
    WORKING_DIRECTORY "${PROJECT_SOURCE_DIR}"
    COMMENT "cargo build --release -p rmm-cpp (librmm_cpp.a and the cxx bridge headers)"
    USES_TERMINAL)
  add_library(${ARG_TARGET} STATIC IMPORTED GLOBAL)
  set_target_properties(${ARG_TARGET} PROPERTIES IMPORTED_LOCATION "${lib}")
  # Users of the imported library depend on ${ARG_TARGET}_cargo (add_dependencies on the
  # INTERFACE target that links it), so cargo runs before anything links.
endfunction()
