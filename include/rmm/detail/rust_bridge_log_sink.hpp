/*
 * rmm-rs: where a logging_resource_adaptor made over a std::ostream or rapids_logger sinks writes,
 * as the Rust side calls it.
 *
 * Plain C++ (no CUDA headers), like rust_bridge.hpp. The Rust adaptor formats each CSV line and
 * hands it over whole, under its own lock (so one call at a time).
 */
#pragma once

#include <cstddef>
#include <string_view>

namespace rmm_rs {

/**
 * @brief The destination of a logging adaptor's lines.
 *
 * The public methods are what Rust calls; they never throw: an exception of `do_write` or
 * `do_flush` makes them return false, which the adaptor keeps as the log's first write error
 * (`flush()` then throws it).
 */
class CppLogSink {
 public:
  CppLogSink()                             = default;
  CppLogSink(CppLogSink const&)            = delete;
  CppLogSink& operator=(CppLogSink const&) = delete;
  virtual ~CppLogSink()                    = default;

  /// Writes the `len` bytes at address `data` as one line (without its end of line).
  [[nodiscard]] bool write_line(std::size_t data, std::size_t len) const noexcept
  {
    try {
      do_write(std::string_view{reinterpret_cast<char const*>(data), len});
      return true;
    } catch (...) {
      return false;
    }
  }

  /// Pushes buffered lines out.
  [[nodiscard]] bool flush() const noexcept
  {
    try {
      do_flush();
      return true;
    } catch (...) {
      return false;
    }
  }

 private:
  virtual void do_write(std::string_view line) const = 0;
  virtual void do_flush() const                      = 0;
};

}  // namespace rmm_rs
