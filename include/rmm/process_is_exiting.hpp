/*
 * rmm-rs: rmm::process_is_exiting(), the crate's process_exit flag (src/process_exit.rs), set by
 * the exit hook that <rmm/detail/runtime_shutdown.hpp> registers.
 */
#pragma once

#include <rmm/detail/export.hpp>

#include "rmm-rs/src/bridge.rs.h"

RMM_NAMESPACE_BEGIN

/**
 * @brief True once the process has begun to exit (`exit()` or a return from `main`, once the
 * exit hook has run): destructors must then leave the CUDA runtime and driver alone and leak what
 * they hold. One atomic load; never calls into CUDA.
 */
inline bool process_is_exiting() noexcept { return rmm_rs::process_is_exiting(); }

RMM_NAMESPACE_END
