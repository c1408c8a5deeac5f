/*
 * rmm-rs: rmm::default_logger(), the logger of RMM 26.10 (a rapids_logger::logger), backed by the
 * Rust logger of the crate (src/logger.rs): its level and flush level are the Rust logger's, and
 * its default sink writes to the Rust sink, which is the file named by RMM_DEBUG_LOG_FILE (emptied
 * when first used) or else stderr. So lines logged from C++ (RMM_LOG_* or the logger's methods)
 * and from Rust land in one place, in order. Sinks pushed onto the logger's sinks() get the same
 * lines.
 */
#pragma once

#include <rmm/detail/export.hpp>
#include <rmm/logger_macros.hpp>

#include <rapids_logger/logger.hpp>

#include "rmm-rs/src/bridge.rs.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

RMM_NAMESPACE_BEGIN

namespace detail {

/// Hands each line to the Rust logger's sink.
class rust_log_sink final : public rapids_logger::sink {
 protected:
  void sink_it(rapids_logger::level_enum lvl, std::string const& line) override
  {
    rmm_rs::logger_write(
      static_cast<std::int32_t>(lvl),
      rust::Slice<std::uint8_t const>{reinterpret_cast<std::uint8_t const*>(line.data()), line.size()});
  }
  void flush_it() override { rmm_rs::logger_flush(); }
};

/// Keeps the default logger's levels in the Rust logger, which filters Rust's messages with them.
class rust_logger_levels final : public rapids_logger::detail::logger_impl {
 public:
  [[nodiscard]] rapids_logger::level_enum level() const override
  {
    return static_cast<rapids_logger::level_enum>(rmm_rs::logger_level());
  }
  void set_level(rapids_logger::level_enum lvl) override
  {
    rmm_rs::logger_set_level(static_cast<std::int32_t>(lvl));
  }
  [[nodiscard]] rapids_logger::level_enum flush_level() const override
  {
    return static_cast<rapids_logger::level_enum>(rmm_rs::logger_flush_level());
  }
  void set_flush_level(rapids_logger::level_enum lvl) override
  {
    rmm_rs::logger_set_flush_level(static_cast<std::int32_t>(lvl));
  }
};

}  // namespace detail

/**
 * @brief The default sink of the global logger: the file named by `RMM_DEBUG_LOG_FILE`, else
 * stderr (the Rust logger's sink, chosen when it is first used).
 */
inline rapids_logger::sink_ptr default_sink() { return std::make_shared<detail::rust_log_sink>(); }

/// The default pattern of the global logger (thread id, time with microseconds, level, message).
inline std::string default_pattern() { return "[%6t][%H:%M:%S:%f][%-6l] %v"; }

/// The global logger, made on first use with default_sink() and default_pattern().
inline rapids_logger::logger& default_logger()
{
  static rapids_logger::logger logger_ = [] {
    rapids_logger::logger l{"RMM",
                            std::vector<rapids_logger::sink_ptr>{default_sink()},
                            std::make_unique<detail::rust_logger_levels>()};
    l.set_pattern(default_pattern());
    return l;
  }();
  return logger_;
}

RMM_NAMESPACE_END
