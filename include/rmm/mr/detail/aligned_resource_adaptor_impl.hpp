/*
 * rmm-rs: RMM's detail path of aligned_resource_adaptor. RMM implements the class here and wraps it in
 * cuda::mr::shared_resource; in rmm-rs the implementation is the Rust resource behind
 * rmm::mr::aligned_resource_adaptor, so this header brings in that class.
 */
#pragma once

#include <rmm/mr/aligned_resource_adaptor.hpp>
