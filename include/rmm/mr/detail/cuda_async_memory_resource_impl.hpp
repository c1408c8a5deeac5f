/*
 * rmm-rs: RMM's detail path for cuda_async_memory_resource. The implementation lives in the Rust
 * resource behind rmm::mr::cuda_async_memory_resource; this header only provides that class.
 */
#pragma once

#include <rmm/mr/cuda_async_memory_resource.hpp>
