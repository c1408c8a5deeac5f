/*
 * rmm-rs: the current resource of each device (RMM 26's rmm/mr/per_device_resource.hpp).
 *
 * Each device has one current resource, initially a cuda_memory_resource. Containers,
 * thrust_allocator and exec_policy take it when no resource is given. The table owns an
 * any_resource: setting one of our resources (or any copyable resource) keeps it alive; setting a
 * resource_ref requires the referenced resource to outlive its use.
 *
 * Rust code of rmm-rs called from this program has its own table. Setting one of the Rust-backed
 * resources (by its type, not through an any_resource or a reference) sets it there too, and a
 * reset resets both; setting any other resource leaves the Rust table as it was.
 *
 * The functions are thread-safe with respect to each other.
 */
#pragma once

#include <rmm/cuda_device.hpp>
#include <rmm/mr/cuda_memory_resource.hpp>
#include <rmm/mr/detail/rust_resource.hpp>
#include <rmm/resource_ref.hpp>

#include <cuda/memory_resource>

#include <cstdlib>
#include <map>
#include <mutex>
#include <type_traits>
#include <utility>

namespace rmm::mr {

namespace detail {

/// The resource every device starts with.
inline cuda_memory_resource& initial_resource()
{
  static cuda_memory_resource mr{};
  return mr;
}

inline std::mutex& ref_map_lock()
{
  static std::mutex lock;
  return lock;
}

/// Tells the Rust side that the process is exiting (an atexit handler).
inline void on_process_exit() noexcept { rmm_rs::mark_process_exiting(); }

inline auto& get_ref_map()
{
  static std::map<cuda_device_id::value_type, any_device_resource> device_id_to_resource;
  // The map may hold the last reference to a pool, destroyed during exit, possibly after the CUDA
  // runtime has shut down. A handler registered after the map is made runs before the map is
  // destroyed, and from then on the Rust resources make no CUDA call (RMM fixed the same crash
  // the same way).
  static bool const exit_hook_registered = std::atexit(on_process_exit) == 0;
  (void)exit_hook_registered;
  return device_id_to_resource;
}

/// Mirrors a Rust-backed resource into the Rust per-device table. Best effort: the C++ table is
/// authoritative for C++ code, so a Rust side that cannot take it is not an error here.
template <class Resource>
void mirror_to_rust(cuda_device_id device_id, Resource const& resource) noexcept
{
  if constexpr (is_rust_resource_v<Resource>) {
    try {
      (void)rmm_rs::set_rust_per_device_resource(device_id.value(), resource.handle());
    } catch (...) {
    }
  }
}

/// Puts the Rust per-device table back on its initial resource for `device_id`.
inline void reset_rust(cuda_device_id device_id) noexcept
{
  rmm_rs::reset_rust_per_device_resource(device_id.value());
}

}  // namespace detail

/**
 * @brief The current resource of `device_id`; the initial cuda_memory_resource if none was set.
 *
 * The reference is valid until the resource of `device_id` is replaced.
 */
inline device_async_resource_ref get_per_device_resource_ref(cuda_device_id device_id)
{
  std::lock_guard<std::mutex> lock{detail::ref_map_lock()};
  auto& map        = detail::get_ref_map();
  auto const found = map.find(device_id.value());
  if (found == map.end()) {
    auto item = map.emplace(device_id.value(), detail::any_device_resource{detail::initial_resource()});
    return device_async_resource_ref{item.first->second};
  }
  return device_async_resource_ref{found->second};
}

/// Makes `new_resource` the resource of `device_id`; returns the previous one.
inline detail::any_device_resource set_per_device_resource(cuda_device_id device_id,
                                                           detail::any_device_resource new_resource)
{
  std::lock_guard<std::mutex> lock{detail::ref_map_lock()};
  auto& map          = detail::get_ref_map();
  auto const old_itr = map.find(device_id.value());
  if (old_itr == map.end()) {
    map.emplace(device_id.value(), std::move(new_resource));
    return detail::any_device_resource{detail::initial_resource()};
  }
  return std::exchange(old_itr->second, std::move(new_resource));
}

/// As above for one of the Rust-backed resources, which Rust code then also sees as current.
template <class Resource, std::enable_if_t<detail::is_rust_resource_v<Resource>, int> = 0>
detail::any_device_resource set_per_device_resource(cuda_device_id device_id, Resource const& new_resource)
{
  auto previous = set_per_device_resource(device_id, detail::any_device_resource{new_resource});
  detail::mirror_to_rust(device_id, new_resource);
  return previous;
}

/// The current resource of the current device.
inline device_async_resource_ref get_current_device_resource_ref()
{
  return get_per_device_resource_ref(rmm::get_current_cuda_device());
}

/// Makes `new_resource` the resource of the current device; returns the previous one.
inline detail::any_device_resource set_current_device_resource(detail::any_device_resource new_resource)
{
  return set_per_device_resource(rmm::get_current_cuda_device(), std::move(new_resource));
}

/// As above for one of the Rust-backed resources, which Rust code then also sees as current.
template <class Resource, std::enable_if_t<detail::is_rust_resource_v<Resource>, int> = 0>
detail::any_device_resource set_current_device_resource(Resource const& new_resource)
{
  return set_per_device_resource(rmm::get_current_cuda_device(), new_resource);
}

/// Restores the initial resource of `device_id` (for Rust code too); returns the previous one.
inline detail::any_device_resource reset_per_device_resource(cuda_device_id device_id)
{
  auto previous = set_per_device_resource(device_id, detail::any_device_resource{detail::initial_resource()});
  detail::reset_rust(device_id);
  return previous;
}

/// Restores the initial resource of the current device; returns the previous one.
inline detail::any_device_resource reset_current_device_resource()
{
  return reset_per_device_resource(rmm::get_current_cuda_device());
}

// The names of RMM 25.x, which take and give references.

/// Sets a reference as the resource of `device_id` (the referenced resource must outlive its use).
inline detail::any_device_resource set_per_device_resource_ref(cuda_device_id device_id,
                                                               device_async_resource_ref new_resource_ref)
{
  return set_per_device_resource(device_id, detail::any_device_resource{new_resource_ref});
}

/// Sets a reference as the resource of the current device.
inline detail::any_device_resource set_current_device_resource_ref(device_async_resource_ref new_resource_ref)
{
  return set_per_device_resource_ref(rmm::get_current_cuda_device(), new_resource_ref);
}

inline detail::any_device_resource reset_per_device_resource_ref(cuda_device_id device_id)
{
  return reset_per_device_resource(device_id);
}

inline detail::any_device_resource reset_current_device_resource_ref()
{
  return reset_current_device_resource();
}

}  // namespace rmm::mr
