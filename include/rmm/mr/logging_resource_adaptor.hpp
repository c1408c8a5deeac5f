/*
 * rmm-rs: rmm::mr::logging_resource_adaptor, the Rust logging adaptor of rmm-rs (one CSV line per
 * allocation and free).
 */
#pragma once

#include <rmm/mr/detail/rust_resource.hpp>
#include <rmm/resource_ref.hpp>

#include <cuda/memory_resource>

#include <cstdlib>
#include <string>
#include <utility>

namespace rmm::mr {

/// Logs every allocation and free to a CSV file. Copies share the log.
class logging_resource_adaptor final
  : public detail::rust_resource<logging_resource_adaptor,
                                 detail::shared_rust_state,
                                 cuda::mr::device_accessible> {
 public:
  /**
   * @param upstream where allocations go
   * @param filename the log file (default: $RMM_LOG_FILE); an empty name logs to stdout
   * @param auto_flush flush after every line
   * @throws rmm::logic_error if the file cannot be opened, or no name is given and RMM_LOG_FILE
   * is not set
   */
  template <class Upstream, std::enable_if_t<detail::is_upstream_for_v<Upstream, logging_resource_adaptor>, int> = 0>
  logging_resource_adaptor(Upstream&& upstream,
                           std::string const& filename = get_default_filename(),
                           bool auto_flush             = false)
    : rust_resource{detail::upstream_resource{std::forward<Upstream>(upstream)},
                    rmm_rs::new_logging_adaptor,
                    rust::Str{filename},
                    auto_flush}
  {
  }

  [[nodiscard]] device_async_resource_ref get_upstream_resource() const noexcept
  {
    return upstream_ref();
  }

  /// Writes buffered log lines out.
  void flush() { detail::check(handle().flush_log()); }

  /// The CSV header line of the log.
  [[nodiscard]] std::string header() const { return "Thread,Time,Action,Pointer,Size,Stream"; }

  /// $RMM_LOG_FILE. @throws rmm::logic_error when it is not set
  static std::string get_default_filename()
  {
    auto* filename = std::getenv("RMM_LOG_FILE");
    RMM_EXPECTS(filename != nullptr,
                "RMM logging requested without an explicit file name, but RMM_LOG_FILE is unset");
    return std::string{filename};
  }
};

static_assert(cuda::mr::resource_with<logging_resource_adaptor, cuda::mr::device_accessible>,
              "logging_resource_adaptor does not satisfy the cuda::mr::resource concept");

}  // namespace rmm::mr
