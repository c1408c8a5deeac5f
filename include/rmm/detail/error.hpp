/*
 * rmm-rs: RMM keeps its error macros here; they live in <rmm/error.hpp>.
 */
#pragma once

#include <rmm/error.hpp>
