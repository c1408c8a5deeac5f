/*
 * rmm-rs: RMM's path for the fixed-size resource's implementation. In rmm-rs that lives in the Rust core
 * (algorithms/src/fixed_size/, src/resource/); this header exists so that code including RMM's path
 * compiles, and gives the public class.
 */
#pragma once

#include <rmm/mr/fixed_size_memory_resource.hpp>
