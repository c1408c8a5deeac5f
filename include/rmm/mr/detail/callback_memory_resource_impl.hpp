/*
 * rmm-rs: RMM's detail path of callback_memory_resource. RMM implements the class here and wraps it in
 * cuda::mr::shared_resource; in rmm-rs the implementation is the Rust resource behind
 * rmm::mr::callback_memory_resource, so this header brings in that class.
 */
#pragma once

#include <rmm/mr/callback_memory_resource.hpp>
