/*
 * rmm-rs: RMM's detail path for sam_headroom_memory_resource. The implementation lives in the Rust
 * resource behind rmm::mr::sam_headroom_memory_resource; this header only provides that class.
 */
#pragma once

#include <rmm/mr/sam_headroom_memory_resource.hpp>
