/*
 * rmm-rs: the path of RMM's pool implementation. In rmm-rs the pool is the Rust pool (algorithms/,
 * src/resource/pool.rs) behind rmm::mr::pool_memory_resource; including this header gives that
 * class and the detail pieces RMM's header includes.
 */
#pragma once

#include <rmm/mr/detail/coalescing_free_list.hpp>
#include <rmm/mr/detail/stream_ordered_memory_resource.hpp>
#include <rmm/mr/pool_memory_resource.hpp>
#include <rmm/resource_ref.hpp>
