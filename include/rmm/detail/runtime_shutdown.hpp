/*
 * rmm-rs: the hook that tells the library the process is exiting (see
 * <rmm/process_is_exiting.hpp> and src/process_exit.rs).
 */
#pragma once

#include <rmm/detail/export.hpp>

#include "rmm-rs/src/bridge.rs.h"

#include <cstdlib>

RMM_NAMESPACE_BEGIN
namespace detail {

/// The exit hook: from now on Rust resources make no CUDA call.
inline void on_process_exit_hook() noexcept { rmm_rs::mark_process_exiting(); }

/**
 * @brief Registers (once per process) an atexit handler that marks the process as exiting.
 * Objects made before the first call are destroyed after the handler has run, so their
 * destructors see rmm::process_is_exiting() true.
 */
inline void register_process_exit_hook() noexcept
{
  static bool const registered = std::atexit(on_process_exit_hook) == 0;
  (void)registered;
}

}  // namespace detail
RMM_NAMESPACE_END
