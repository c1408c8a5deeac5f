/*
 * rmm-rs: RMM's detail header of the arena resource's implementation. Here the implementation is
 * the Rust `ArenaMemoryResource` behind `rmm::mr::arena_memory_resource`; this header keeps RMM's
 * include path.
 */
#pragma once

#include <rmm/mr/detail/arena.hpp>
