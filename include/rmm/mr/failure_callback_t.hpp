/*
 * rmm-rs: the callback type of failure_callback_resource_adaptor.
 */
#pragma once

#include <cstddef>
#include <functional>

namespace rmm::mr {

/**
 * @brief Called with the size of an allocation that failed and the user's argument; returns true
 * to retry the allocation, false to let the failure propagate.
 */
using failure_callback_t = std::function<bool(std::size_t, void*)>;

}  // namespace rmm::mr
