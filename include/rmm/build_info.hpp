/*
 * rmm-rs: which CUDA major the linked library was built for, and which one compiles this code.
 * The two must agree: a CUDA 12 program links the CUDA 12 build of librmm (make CUDA_MAJOR=12,
 * cmake -DRMM_CUDA_MAJOR=12, cargo --features cuda-12).
 */
#pragma once

#include <rmm/detail/export.hpp>

#include <cuda_runtime_api.h>

#include "rmm-rs/src/bridge.rs.h"

RMM_NAMESPACE_BEGIN
namespace rs {

/**
 * @brief The CUDA major (12 or 13) the linked rmm-rs library was built for: the driver API it
 * calls (the crate feature `cuda-12` or `cuda-13`). Never calls into CUDA.
 */
inline int build_cuda_major() noexcept { return static_cast<int>(rmm_rs::build_cuda_major()); }

/// The CUDA major of the toolkit compiling this translation unit (`CUDART_VERSION / 1000`).
inline constexpr int compiled_cuda_major = CUDART_VERSION / 1000;

}  // namespace rs
RMM_NAMESPACE_END
