// Factories of every stateful resource class that needs no GPU, each over a fresh host upstream
// (rmm::test::new_delete_resource): typed tests run one test body over a list of them.
// fixed_size_memory_resource and binning_memory_resource are not here: they declare a destructor,
// as RMM's do, so they are neither copied as handles nor moved from.
#pragma once

#include "test_utils.hpp"

#include <rmm/mr/aligned_resource_adaptor.hpp>
#include <rmm/mr/failure_callback_resource_adaptor.hpp>
#include <rmm/mr/limiting_resource_adaptor.hpp>
#include <rmm/mr/logging_resource_adaptor.hpp>
#include <rmm/mr/pool_memory_resource.hpp>
#include <rmm/mr/statistics_resource_adaptor.hpp>
#include <rmm/mr/thread_safe_resource_adaptor.hpp>
#include <rmm/mr/tracking_resource_adaptor.hpp>

#include <cstddef>

namespace rmm::test::stateful {

/// The failure callback of the failure_callback factory: never retries.
inline bool never_retry(std::size_t, void*) { return false; }

struct pool {
  static rmm::mr::pool_memory_resource make()
  {
    return rmm::mr::pool_memory_resource{new_delete_resource{}, 0};
  }
};
struct statistics {
  static rmm::mr::statistics_resource_adaptor make()
  {
    return rmm::mr::statistics_resource_adaptor{new_delete_resource{}};
  }
};
struct tracking {
  static rmm::mr::tracking_resource_adaptor make()
  {
    return rmm::mr::tracking_resource_adaptor{new_delete_resource{}};
  }
};
struct limiting {
  static rmm::mr::limiting_resource_adaptor make()
  {
    return rmm::mr::limiting_resource_adaptor{new_delete_resource{}, std::size_t{1} << 20};
  }
};
struct logging {
  static rmm::mr::logging_resource_adaptor make()
  {
    return rmm::mr::logging_resource_adaptor{new_delete_resource{}, "/dev/null"};
  }
};
struct aligned {
  static rmm::mr::aligned_resource_adaptor make()
  {
    return rmm::mr::aligned_resource_adaptor{new_delete_resource{}, 4096};
  }
};
struct thread_safe {
  static rmm::mr::thread_safe_resource_adaptor make()
  {
    return rmm::mr::thread_safe_resource_adaptor{new_delete_resource{}};
  }
};
struct failure_callback {
  static rmm::mr::failure_callback_resource_adaptor<> make()
  {
    return rmm::mr::failure_callback_resource_adaptor<>{new_delete_resource{}, never_retry, nullptr};
  }
};

}  // namespace rmm::test::stateful
