/*
 * rmm-rs: the current resource of each device (RMM 26's rmm/mr/per_device_resource.hpp).
 *
 * Each device has one current resource, initially a cuda_memory_resource. Containers,
 * thrust_allocator and exec_policy take it when no resource is given. The table owns an
 * any_resource: setting one of our resources (or any copyable resource) keeps it alive.
 *
 * Rust code of rmm-rs has its own table (the C API, Rust buffers, Python), and the two always
 * agree: every setter here sets the Rust table too, and a getter first takes over what Rust code
 * set since (rmmInitialize, rmmFinalize, Python's set_current_device_resource). One of our
 * resources, however it is passed (by type, in an any_resource, by resource_ref), is current in
 * Rust as itself; any other resource is called from Rust through the C++ table's own copy.
 *
 * Lifetime, RMM's rule: a resource_ref does not own. The caller keeps the referenced resource
 * alive while it is current and while memory allocated from it is live, Rust's included. (CCCL
 * copies the referenced object into the table's any_resource, so a resource whose copies share
 * their state, as all of ours do, lives on; a user's resource that refers to another must not.)
 *
 * The functions are thread-safe with respect to each other.
 */
#pragma once

#include <rmm/cuda_device.hpp>
#include <rmm/mr/cuda_memory_resource.hpp>
#include <rmm/mr/detail/rust_resource.hpp>
#include <rmm/resource_ref.hpp>

#include <cuda/memory_resource>

#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <type_traits>
#include <utility>

namespace rmm::mr {

namespace detail {

/// The resource every device starts with (its Rust handle is the Rust table's initial resource).
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

/// The table's copy of initial_resource(), one for every device and never destroyed: a reference
/// to it stays valid after the device's resource is replaced (RMM programs keep one, to restore it).
inline std::shared_ptr<any_device_resource> const& initial_any()
{
  static auto const* const any =
    new std::shared_ptr<any_device_resource>{std::make_shared<any_device_resource>(initial_resource())};  // NOLINT
  return *any;
}

/// Tells the Rust side that the process is exiting (an atexit handler).
inline void on_process_exit() noexcept { rmm_rs::mark_process_exiting(); }

/// A resource that Rust code made current (the C API, Python, Rust code), as the C++ table
/// holds it.
class rust_table_resource final
  : public rust_resource<rust_table_resource, shared_rust_state<rmm_rs::PlainResource>, cuda::mr::device_accessible> {
 public:
  explicit rust_table_resource(rust::Box<rmm_rs::PlainResource> handle) : rust_resource{std::move(handle)} {}
};

/// One device's entry: the C++ resource, and the Rust resource that serves the same memory and
/// is current in the Rust table (as of `checked`).
struct device_entry {
  /// Shared with the Rust side when Rust calls it through C++ (a resource not ours).
  std::shared_ptr<any_device_resource> resource;
  shared_handle rust;
  /// The Rust table's generation when `rust` was last seen current there; `unchecked` forces a look.
  std::uint64_t checked;
  static constexpr std::uint64_t unchecked = ~std::uint64_t{0};
};

/// What a change of the table displaced: destroyed by the caller after it released the lock, so
/// that a destructor that calls these functions cannot deadlock.
struct displaced {
  /// Replaced when a getter or setter took over what Rust code had set.
  std::shared_ptr<any_device_resource> taken_over;
  shared_handle taken_over_rust;
  /// Replaced by a setter.
  std::shared_ptr<any_device_resource> replaced;
  shared_handle replaced_rust;
  std::optional<rust::Box<rmm_rs::PlainResource>> rust_previous;
};

inline auto& get_ref_map()
{
  static std::map<cuda_device_id::value_type, device_entry> device_id_to_resource;
  // The map may hold the last reference to a pool, destroyed during exit, possibly after the CUDA
  // runtime has shut down. A handler registered after the map is made runs before the map is
  // destroyed, and from then on the Rust resources make no CUDA call (RMM fixed the same crash
  // the same way).
  static bool const exit_hook_registered = std::atexit(on_process_exit) == 0;
  (void)exit_hook_registered;
  return device_id_to_resource;
}

/// The Rust resource that serves `resource`: its own handle when it holds one of ours, otherwise
/// a Rust resource that calls `resource` itself (the table's copy, shared).
/// @throws rmm::logic_error when it holds a moved-from resource of ours
inline shared_handle rust_handle_for(std::shared_ptr<any_device_resource> const& resource)
{
  if (auto handle = find_rust_handle(*resource)) { return std::move(*handle); }
  auto wrapper =
    rmm_rs::new_cpp_resource_wrapper(std::make_unique<cpp_resource>(resource, /*host_accessible=*/false));
  check(wrapper->resource().status());
  return share_any(std::make_shared<rust::Box<rmm_rs::PlainResource>>(std::move(wrapper)));
}

/// The entry of `id` (made on first use), after taking over what Rust code set since it was last
/// looked at. Call with ref_map_lock() held; what it replaces goes to `out`.
inline device_entry& entry_for(cuda_device_id::value_type id, displaced& out)
{
  auto& map   = get_ref_map();
  auto found  = map.find(id);
  auto& entry = found != map.end()
                  ? found->second
                  : map
                      .emplace(id,
                               device_entry{initial_any(), initial_resource().shared(), device_entry::unchecked})
                      .first->second;
  auto const generation = rmm_rs::rust_per_device_generation();  // read before the resource
  if (entry.checked == generation) { return entry; }
  if (!rmm_rs::rust_per_device_resource_is(id, *entry.rust)) {
    if (rmm_rs::rust_per_device_resource_is(id, initial_resource().handle().resource())) {
      out.taken_over      = std::exchange(entry.resource, initial_any());
      out.taken_over_rust = std::exchange(entry.rust, initial_resource().shared());
    } else {
      rust_table_resource adopted{rmm_rs::get_rust_per_device_resource(id)};
      out.taken_over_rust = std::exchange(entry.rust, adopted.shared());
      out.taken_over = std::exchange(entry.resource, std::make_shared<any_device_resource>(std::move(adopted)));
    }
  }
  entry.checked = generation;
  return entry;
}

/// Makes `resource`, served in Rust by `rust`, the resource of `device_id` in both tables;
/// returns the previous one.
inline any_device_resource install(cuda_device_id device_id,
                                   std::shared_ptr<any_device_resource> resource,
                                   shared_handle rust)
{
  displaced old;
  {
    std::lock_guard<std::mutex> lock{ref_map_lock()};
    auto& entry        = entry_for(device_id.value(), old);
    auto rust_previous = rmm_rs::exchange_rust_per_device_resource(device_id.value(), *rust);
    check(rust_previous->resource().status());  // only a failed handle, which no C++ constructor returns
    old.rust_previous = std::move(rust_previous);
    old.replaced      = std::exchange(entry.resource, std::move(resource));
    old.replaced_rust = std::exchange(entry.rust, std::move(rust));
    entry.checked     = device_entry::unchecked;
  }
  // Still shared (the initial resource, or Rust holds the table's copy while memory it allocated
  // is live): hand back a copy.
  if (old.replaced.use_count() == 1) { return std::move(*old.replaced); }
  return *old.replaced;
}

}  // namespace detail

/**
 * @brief The current resource of `device_id`; the initial cuda_memory_resource if none was set.
 *
 * The reference is valid until the resource of `device_id` is replaced.
 */
inline device_async_resource_ref get_per_device_resource_ref(cuda_device_id device_id)
{
  detail::displaced old;
  std::lock_guard<std::mutex> lock{detail::ref_map_lock()};
  return device_async_resource_ref{*detail::entry_for(device_id.value(), old).resource};
}

/// Makes `new_resource` the resource of `device_id`, for Rust code too; returns the previous one.
inline detail::any_device_resource set_per_device_resource(cuda_device_id device_id,
                                                           detail::any_device_resource new_resource)
{
  auto resource = std::make_shared<detail::any_device_resource>(std::move(new_resource));
  auto rust     = detail::rust_handle_for(resource);
  return detail::install(device_id, std::move(resource), std::move(rust));
}

/// As above for one of the Rust-backed resources by type.
/// @throws rmm::logic_error when `new_resource` was moved from
template <class Resource, std::enable_if_t<detail::is_rust_resource_v<Resource>, int> = 0>
detail::any_device_resource set_per_device_resource(cuda_device_id device_id, Resource const& new_resource)
{
  if (new_resource.moved_from()) { detail::throw_moved_from(); }
  return detail::install(
    device_id, std::make_shared<detail::any_device_resource>(new_resource), new_resource.shared());
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

/// As above for one of the Rust-backed resources by type.
template <class Resource, std::enable_if_t<detail::is_rust_resource_v<Resource>, int> = 0>
detail::any_device_resource set_current_device_resource(Resource const& new_resource)
{
  return set_per_device_resource(rmm::get_current_cuda_device(), new_resource);
}

/// Restores the initial resource of `device_id` (for Rust code too); returns the previous one.
inline detail::any_device_resource reset_per_device_resource(cuda_device_id device_id)
{
  return set_per_device_resource(device_id, detail::initial_resource());
}

/// Restores the initial resource of the current device; returns the previous one.
inline detail::any_device_resource reset_current_device_resource()
{
  return reset_per_device_resource(rmm::get_current_cuda_device());
}

// The names of RMM 25.x, which take and give references.

/// Sets a reference as the resource of `device_id`, for Rust code too. It does not own: the
/// referenced resource must outlive its use (see the top of this file).
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
