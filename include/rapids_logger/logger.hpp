/*
 * rmm-rs: the rapids-logger API that RMM 26.10 exposes through <rmm/logger.hpp>, header-only.
 *
 * A logger has a name, a level (messages below it are dropped), a flush level (messages at or
 * above it flush every sink), a pattern (spdlog-style, see rapids_logger/detail/pattern.hpp) and a
 * vector of sinks; each message is formatted once and written to every sink. Sinks are
 * thread-safe (the `_mt` of their names). rmm::default_logger() is one of these loggers whose
 * level lives on the Rust side, so that C++ and Rust filter with the same level.
 */
#pragma once

#include <rapids_logger/detail/pattern.hpp>
#include <rapids_logger/log_levels.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace rapids_logger {

/// The levels of a logger, with spdlog's values.
enum class level_enum : std::int32_t {
  trace    = RAPIDS_LOGGER_LOG_LEVEL_TRACE,
  debug    = RAPIDS_LOGGER_LOG_LEVEL_DEBUG,
  info     = RAPIDS_LOGGER_LOG_LEVEL_INFO,
  warn     = RAPIDS_LOGGER_LOG_LEVEL_WARN,
  error    = RAPIDS_LOGGER_LOG_LEVEL_ERROR,
  critical = RAPIDS_LOGGER_LOG_LEVEL_CRITICAL,
  off      = RAPIDS_LOGGER_LOG_LEVEL_OFF,
  n_levels
};

constexpr bool operator<(level_enum a, level_enum b) { return static_cast<std::int32_t>(a) < static_cast<std::int32_t>(b); }
constexpr bool operator<=(level_enum a, level_enum b) { return static_cast<std::int32_t>(a) <= static_cast<std::int32_t>(b); }
constexpr bool operator>(level_enum a, level_enum b) { return static_cast<std::int32_t>(a) > static_cast<std::int32_t>(b); }
constexpr bool operator>=(level_enum a, level_enum b) { return static_cast<std::int32_t>(a) >= static_cast<std::int32_t>(b); }

/// Called with the level and the formatted line (with its end of line) by a callback_sink_mt.
typedef void (*log_callback_t)(int lvl, const char* msg);
/// Called when a callback_sink_mt is flushed.
typedef void (*flush_callback_t)();

class logger;

/// Where a logger's lines go. Each write and flush is done under the sink's own lock.
class sink {
 public:
  virtual ~sink() = default;
  sink(sink const&)            = delete;
  sink& operator=(sink const&) = delete;

  /// Writes one formatted line (without its end of line) logged at `lvl`.
  void write(level_enum lvl, std::string const& line)
  {
    std::lock_guard<std::mutex> lock{mutex_};
    sink_it(lvl, line);
  }
  /// Pushes out what the sink buffers.
  void flush()
  {
    std::lock_guard<std::mutex> lock{mutex_};
    flush_it();
  }

 protected:
  sink() = default;
  /// Writes `line` (called under the lock).
  virtual void sink_it(level_enum lvl, std::string const& line) = 0;
  /// Flushes (called under the lock).
  virtual void flush_it() = 0;

 private:
  std::mutex mutex_;
};

/// A shared sink, as loggers hold them.
using sink_ptr = std::shared_ptr<sink>;

namespace detail {

/// Opens the log file `filename` for writing as the Rust side opens every log file
/// (rmm::logger::open_log_file): created with mode 0644 (before the umask) when missing, emptied
/// when `truncate` else appended to, and never through a symbolic link at the path, which another
/// user of a shared directory could have planted. Throws std::runtime_error naming the file.
inline std::FILE* open_log_file(std::string const& filename, bool truncate)
{
  int const flags = O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | (truncate ? O_TRUNC : O_APPEND);
  int const fd    = ::open(filename.c_str(), flags, 0644);
  std::FILE* file = fd < 0 ? nullptr : ::fdopen(fd, truncate ? "w" : "a");
  if (file == nullptr) {
    int const error = errno;
    if (fd >= 0) { ::close(fd); }
    struct stat st {};
    std::string const why = (::lstat(filename.c_str(), &st) == 0 && S_ISLNK(st.st_mode))
                              ? "it is a symbolic link, which log files are never opened through"
                              : std::strerror(error);
    throw std::runtime_error("rapids_logger: cannot open log file '" + filename + "': " + why);
  }
  return file;
}

}  // namespace detail

/// Appends lines to a file (created if missing; emptied first when `truncate`; never opened
/// through a symbolic link: see detail::open_log_file).
class basic_file_sink_mt : public sink {
 public:
  /// @throws std::runtime_error if the file cannot be opened or is a symbolic link
  explicit basic_file_sink_mt(std::string const& filename, bool truncate = false)
    : file_{detail::open_log_file(filename, truncate)}
  {
  }
  ~basic_file_sink_mt() override { std::fclose(file_); }

 protected:
  void sink_it(level_enum, std::string const& line) override
  {
    std::fwrite(line.data(), 1, line.size(), file_);
    std::fputc('\n', file_);
  }
  void flush_it() override { std::fflush(file_); }

 private:
  std::FILE* file_;
};

/// Writes lines to a std::ostream that must outlive the sink.
class ostream_sink_mt : public sink {
 public:
  /// @param force_flush flush the stream after every line
  explicit ostream_sink_mt(std::ostream& stream, bool force_flush = false)
    : stream_{stream}, force_flush_{force_flush}
  {
  }

 protected:
  void sink_it(level_enum, std::string const& line) override
  {
    stream_ << line << '\n';
    if (force_flush_) { stream_.flush(); }
  }
  void flush_it() override { stream_.flush(); }

 private:
  std::ostream& stream_;
  bool force_flush_;
};

/// Discards every line.
class null_sink_mt : public sink {
 public:
  null_sink_mt() = default;

 protected:
  void sink_it(level_enum, std::string const&) override {}
  void flush_it() override {}
};

/// Writes lines to the standard error stream.
class stderr_sink_mt : public sink {
 public:
  stderr_sink_mt() = default;

 protected:
  void sink_it(level_enum, std::string const& line) override
  {
    std::fwrite(line.data(), 1, line.size(), stderr);
    std::fputc('\n', stderr);
  }
  void flush_it() override { std::fflush(stderr); }
};

/// Hands every line (with its end of line) to a callback, and flushes through another.
class callback_sink_mt : public sink {
 public:
  explicit callback_sink_mt(const log_callback_t& callback, const flush_callback_t& flush = nullptr)
    : callback_{callback}, flush_{flush}
  {
  }

 protected:
  void sink_it(level_enum lvl, std::string const& line) override
  {
    if (callback_ != nullptr) { callback_(static_cast<int>(lvl), (line + '\n').c_str()); }
  }
  void flush_it() override
  {
    if (flush_ != nullptr) { flush_(); }
  }

 private:
  log_callback_t callback_;
  flush_callback_t flush_;
};

namespace detail {

/// Where a logger keeps its level and flush level. The default keeps them in the object;
/// rmm::default_logger() keeps them on the Rust side.
class logger_impl {
 public:
  virtual ~logger_impl() = default;
  [[nodiscard]] virtual level_enum level() const { return level_.load(); }
  virtual void set_level(level_enum lvl) { level_.store(lvl); }
  [[nodiscard]] virtual level_enum flush_level() const { return flush_level_.load(); }
  virtual void set_flush_level(level_enum lvl) { flush_level_.store(lvl); }

 private:
  std::atomic<level_enum> level_{level_enum::info};
  std::atomic<level_enum> flush_level_{level_enum::off};
};

}  // namespace detail

/// A named logger writing formatted lines to its sinks.
class logger {
 public:
  logger()                         = delete;
  logger(logger const&)            = delete;
  logger& operator=(logger const&) = delete;
  logger(logger&& other) noexcept
    : name_{std::move(other.name_)},
      pattern_{std::move(other.pattern_)},
      impl_{std::move(other.impl_)},
      sinks_{*this, std::move(other.sinks_.sinks_)}
  {
  }
  logger& operator=(logger&& other) noexcept
  {
    name_         = std::move(other.name_);
    pattern_      = std::move(other.pattern_);
    impl_         = std::move(other.impl_);
    sinks_.sinks_ = std::move(other.sinks_.sinks_);
    return *this;
  }

  /// The sinks of a logger, edited in place (push_back, pop_back, clear) and iterated.
  class sink_vector {
   public:
    using Iterator      = std::vector<sink_ptr>::iterator;        ///< Iterator
    using ConstIterator = std::vector<sink_ptr>::const_iterator;  ///< Const iterator

    explicit sink_vector(logger& parent, std::vector<sink_ptr> sinks = {})
      : parent_{&parent}, sinks_{std::move(sinks)}
    {
    }
    void push_back(sink_ptr const& s) { sinks_.push_back(s); }
    void push_back(sink_ptr&& s) { sinks_.push_back(std::move(s)); }
    void pop_back() { sinks_.pop_back(); }
    void clear() { sinks_.clear(); }
    Iterator begin() { return sinks_.begin(); }
    Iterator end() { return sinks_.end(); }
    [[nodiscard]] ConstIterator begin() const { return sinks_.begin(); }
    [[nodiscard]] ConstIterator end() const { return sinks_.end(); }
    [[nodiscard]] ConstIterator cbegin() const { return sinks_.cbegin(); }
    [[nodiscard]] ConstIterator cend() const { return sinks_.cend(); }

   private:
    friend class logger;
    logger* parent_;
    std::vector<sink_ptr> sinks_;
  };

  /// A logger writing to the file `filename` (emptied first).
  logger(std::string name, std::string filename)
    : logger{std::move(name), std::vector<sink_ptr>{std::make_shared<basic_file_sink_mt>(filename, true)}}
  {
  }
  /// A logger writing to `stream`, which must outlive it.
  logger(std::string name, std::ostream& stream)
    : logger{std::move(name), std::vector<sink_ptr>{std::make_shared<ostream_sink_mt>(stream)}}
  {
  }
  /// A logger writing to `sinks`.
  logger(std::string name, std::vector<sink_ptr> sinks)
    : logger{std::move(name), std::move(sinks), std::make_unique<detail::logger_impl>()}
  {
  }
  /// A logger whose levels live in `impl` (rmm::default_logger() keeps them in Rust).
  logger(std::string name, std::vector<sink_ptr> sinks, std::unique_ptr<detail::logger_impl> impl)
    : name_{std::move(name)}, impl_{std::move(impl)}, sinks_{*this, std::move(sinks)}
  {
  }
  ~logger()
  {
    try {
      if (impl_) { flush(); }
    } catch (...) {
    }
  }

  /// Formats `format` with `args` as printf does (std::string arguments are passed as C strings)
  /// and logs the result at `lvl`.
  /// @throws std::runtime_error if the format is invalid for the arguments
  template <typename... Args>
  void log(level_enum lvl, std::string const& format, Args&&... args)
  {
    if (!should_log(lvl)) { return; }
    auto c_arg = [](auto&& arg) -> decltype(auto) {
      if constexpr (std::is_same_v<std::decay_t<decltype(arg)>, std::string>) {
        return arg.c_str();
      } else {
        return std::forward<decltype(arg)>(arg);
      }
    };
    int const n = std::snprintf(nullptr, 0, format.c_str(), c_arg(args)...);
    if (n < 0) { throw std::runtime_error("rapids_logger: error during formatting"); }
    std::string message(static_cast<std::size_t>(n) + 1, '\0');
    std::snprintf(message.data(), message.size(), format.c_str(), c_arg(args)...);
    message.resize(static_cast<std::size_t>(n));
    log(lvl, message);
  }

  /// Logs `message` at `lvl` as it is.
  void log(level_enum lvl, std::string const& message)
  {
    if (!should_log(lvl)) { return; }
    std::string const line =
      detail::format_line(pattern_, name_, static_cast<int>(lvl), message);
    for (auto const& s : sinks_.sinks_) {
      s->write(lvl, line);
    }
    if (lvl >= flush_level()) { flush(); }
  }

  template <typename... Args>
  void trace(std::string const& format, Args&&... args)  ///< log() at trace
  {
    log(level_enum::trace, format, std::forward<Args>(args)...);
  }
  template <typename... Args>
  void debug(std::string const& format, Args&&... args)  ///< log() at debug
  {
    log(level_enum::debug, format, std::forward<Args>(args)...);
  }
  template <typename... Args>
  void info(std::string const& format, Args&&... args)  ///< log() at info
  {
    log(level_enum::info, format, std::forward<Args>(args)...);
  }
  template <typename... Args>
  void warn(std::string const& format, Args&&... args)  ///< log() at warn
  {
    log(level_enum::warn, format, std::forward<Args>(args)...);
  }
  template <typename... Args>
  void error(std::string const& format, Args&&... args)  ///< log() at error
  {
    log(level_enum::error, format, std::forward<Args>(args)...);
  }
  template <typename... Args>
  void critical(std::string const& format, Args&&... args)  ///< log() at critical
  {
    log(level_enum::critical, format, std::forward<Args>(args)...);
  }

  [[nodiscard]] sink_vector const& sinks() const { return sinks_; }  ///< The sinks
  sink_vector& sinks() { return sinks_; }                            ///< The sinks, to edit

  /// Messages below this level are dropped.
  [[nodiscard]] level_enum level() const { return impl_->level(); }
  void set_level(level_enum log_level) { impl_->set_level(log_level); }  ///< Sets level()

  /// Flushes every sink.
  void flush()
  {
    for (auto const& s : sinks_.sinks_) {
      s->flush();
    }
  }
  /// Messages at or above `log_level` flush every sink.
  void flush_on(level_enum log_level) { impl_->set_flush_level(log_level); }
  [[nodiscard]] level_enum flush_level() const { return impl_->flush_level(); }  ///< See flush_on

  /// True when a message at `msg_level` would be written.
  [[nodiscard]] bool should_log(level_enum msg_level) const
  {
    return msg_level >= level() && msg_level < level_enum::off;
  }

  /// Sets the spdlog-style pattern of every line (rapids_logger/detail/pattern.hpp).
  void set_pattern(std::string pattern) { pattern_ = std::move(pattern); }

 private:
  std::string name_;
  std::string pattern_{"[%Y-%m-%d %H:%M:%S.%e] [%n] [%l] %v"};
  std::unique_ptr<detail::logger_impl> impl_;
  sink_vector sinks_;
};

/// Sets a logger's level for the life of this object, then puts the previous level back.
struct log_level_setter {
  explicit log_level_setter(logger& logger_, level_enum level)
    : logger_{logger_}, prev_level_{logger_.level()}
  {
    logger_.set_level(level);
  }
  ~log_level_setter() { logger_.set_level(prev_level_); }
  log_level_setter(log_level_setter const&)            = delete;
  log_level_setter& operator=(log_level_setter const&) = delete;

 private:
  logger& logger_;
  level_enum prev_level_;
};

}  // namespace rapids_logger
