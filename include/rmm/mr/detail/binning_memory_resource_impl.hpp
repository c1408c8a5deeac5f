/*
 * rmm-rs: RMM's path for the binning resource's implementation. In rmm-rs that lives in the Rust core
 * (algorithms/src/fixed_size/, src/resource/); this header exists so that code including RMM's path
 * compiles, and gives the public class.
 */
#pragma once

#include <rmm/mr/binning_memory_resource.hpp>
