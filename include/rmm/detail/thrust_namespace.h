/*
 * rmm-rs: RMM includes this before Thrust; Thrust's own configuration is used unchanged.
 */
#pragma once

#include <thrust/detail/config/namespace.h>
