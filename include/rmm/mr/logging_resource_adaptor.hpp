/*
 * rmm-rs: rmm::mr::logging_resource_adaptor, the Rust logging adaptor of rmm-rs (one CSV line per
 * allocation and free, in RMM's format: see src/adaptor/logging.rs).
 */
#pragma once

#include <rmm/detail/rust_bridge_log_sink.hpp>
#include <rmm/mr/detail/rust_resource.hpp>
#include <rmm/resource_ref.hpp>

#include <cuda/memory_resource>

#include <cstdlib>
#include <initializer_list>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

// RMM's third constructor takes rapids_logger sinks; they exist where <rapids_logger/logger.hpp>
// is part of the build.
#if __has_include(<rapids_logger/logger.hpp>)
#include <rapids_logger/logger.hpp>
#define RMM_RS_LOGGING_HAS_SINKS 1
#endif

namespace rmm::mr {

namespace detail {

/// Writes a logging adaptor's lines to a std::ostream, which must outlive the adaptor.
class ostream_log_sink final : public rmm_rs::CppLogSink {
 public:
  explicit ostream_log_sink(std::ostream& stream) : stream_{stream} {}

 private:
  void do_write(std::string_view line) const override { stream_ << line << '\n'; }
  void do_flush() const override { stream_.flush(); }
  std::ostream& stream_;
};

#if defined(RMM_RS_LOGGING_HAS_SINKS)
/// Writes a logging adaptor's lines to rapids_logger sinks, each line to every sink.
class rapids_logger_log_sink final : public rmm_rs::CppLogSink {
 public:
  explicit rapids_logger_log_sink(std::vector<rapids_logger::sink_ptr> sinks)
    : sinks_{std::move(sinks)}
  {
  }

 private:
  void do_write(std::string_view line) const override
  {
    std::string const text{line};
    for (auto const& s : sinks_) {
      if (s) { s->write(rapids_logger::level_enum::info, text); }
    }
  }
  void do_flush() const override
  {
    for (auto const& s : sinks_) {
      if (s) { s->flush(); }
    }
  }
  std::vector<rapids_logger::sink_ptr> sinks_;
};
#endif

}  // namespace detail

/// Logs every allocation and free to a CSV file, stream or sinks. Copies share the log.
class logging_resource_adaptor final
  : public detail::rust_resource<logging_resource_adaptor,
                                 detail::shared_rust_state<rmm_rs::AdaptorResource>,
                                 cuda::mr::device_accessible> {
 public:
  /**
   * @brief Logs to the file `filename`, emptied first.
   *
   * @param upstream where allocations go
   * @param filename the log file (default: $RMM_LOG_FILE)
   * @param auto_flush flush after every line (slow)
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

  /**
   * @brief Logs to `stream`, which must outlive every copy of the adaptor.
   *
   * @param upstream where allocations go
   * @param stream where the lines go
   * @param auto_flush flush `stream` after every line (slow)
   */
  template <class Upstream, std::enable_if_t<detail::is_upstream_for_v<Upstream, logging_resource_adaptor>, int> = 0>
  logging_resource_adaptor(Upstream&& upstream, std::ostream& stream, bool auto_flush = false)
    : rust_resource{detail::upstream_resource{std::forward<Upstream>(upstream)},
                    rmm_rs::new_logging_adaptor_to_sink,
                    std::unique_ptr<rmm_rs::CppLogSink>{new detail::ostream_log_sink{stream}},
                    auto_flush}
  {
  }

#if defined(RMM_RS_LOGGING_HAS_SINKS)
  /**
   * @brief Logs to every one of `sinks`.
   *
   * @param upstream where allocations go
   * @param sinks where the lines go (rapids_logger::basic_file_sink_mt, ostream_sink_mt, ...)
   * @param auto_flush flush every sink after every line (slow)
   */
  template <class Upstream, std::enable_if_t<detail::is_upstream_for_v<Upstream, logging_resource_adaptor>, int> = 0>
  logging_resource_adaptor(Upstream&& upstream,
                           std::initializer_list<rapids_logger::sink_ptr> sinks,
                           bool auto_flush = false)
    : rust_resource{detail::upstream_resource{std::forward<Upstream>(upstream)},
                    rmm_rs::new_logging_adaptor_to_sink,
                    std::unique_ptr<rmm_rs::CppLogSink>{new detail::rapids_logger_log_sink{
                      std::vector<rapids_logger::sink_ptr>{sinks}}},
                    auto_flush}
  {
  }
#endif

  [[nodiscard]] device_async_resource_ref get_upstream_resource() const noexcept
  {
    return upstream_ref();
  }

  /// Writes buffered log lines out. @throws rmm::logic_error naming the first failed write
  void flush() { detail::check(live_handle().logging_flush()); }

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
