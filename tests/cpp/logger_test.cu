// rmm/logger.hpp and rmm/logger_macros.hpp: the macros' printf-style formatting and level
// filtering, the level shared with the Rust logger, rapids_logger's sinks and patterns, and
// RMM_DEBUG_LOG_FILE taking C++ and Rust lines into one file.
#include <rmm/detail/runtime_shutdown.hpp>
#include <rmm/logger.hpp>

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

using rapids_logger::level_enum;

std::vector<std::string> lines_of(std::string const& text)
{
  std::vector<std::string> lines;
  std::istringstream in{text};
  for (std::string line; std::getline(in, line);) {
    lines.push_back(line);
  }
  return lines;
}

bool ends_with(std::string const& s, std::string const& tail)
{
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

std::string logger_temp_path(char const* name)
{
  return ::testing::TempDir() + "rmm_logger_test_" + std::to_string(::getpid()) + "_" + name;
}

/// Points the default logger at a string stream only, and puts its sinks and level back after.
class DefaultLoggerCapture : public ::testing::Test {
 protected:
  void SetUp() override
  {
    auto& sinks = rmm::default_logger().sinks();
    saved_.assign(sinks.begin(), sinks.end());
    saved_level_ = rmm::default_logger().level();
    sinks.clear();
    sinks.push_back(std::make_shared<rapids_logger::ostream_sink_mt>(out_));
  }
  void TearDown() override
  {
    auto& sinks = rmm::default_logger().sinks();
    sinks.clear();
    for (auto& s : saved_) {
      sinks.push_back(s);
    }
    rmm::default_logger().set_level(saved_level_);
  }
  std::ostringstream out_;

 private:
  std::vector<rapids_logger::sink_ptr> saved_;
  level_enum saved_level_{};
};

TEST_F(DefaultLoggerCapture, MacrosFormatAndFilterByLevel)
{
  EXPECT_EQ(rmm::default_logger().level(), level_enum::info);
  RMM_LOG_DEBUG("hidden %d", 1);
  RMM_LOG_INFO("value %d %s %s", 42, std::string{"as string"}, "as c string");
  RMM_LOG_WARN("no arguments: 100%");
  {
    rapids_logger::log_level_setter quiet{rmm::default_logger(), level_enum::error};
    RMM_LOG_WARN("hidden %d", 2);
    RMM_LOG_ERROR("shown %.1f", 2.5);
  }
  RMM_LOG_CRITICAL("back at %s", "info");
  auto const lines = lines_of(out_.str());
  ASSERT_EQ(lines.size(), 4u) << out_.str();
  EXPECT_TRUE(ends_with(lines[0], "][info  ] value 42 as string as c string")) << lines[0];
  EXPECT_TRUE(ends_with(lines[1], "][warning] no arguments: 100%")) << lines[1];
  EXPECT_TRUE(ends_with(lines[2], "][error ] shown 2.5")) << lines[2];
  EXPECT_TRUE(ends_with(lines[3], "][critical] back at info")) << lines[3];
  // RMM's default pattern: [%6t][%H:%M:%S:%f][%-6l] %v
  EXPECT_EQ(rmm::default_pattern(), "[%6t][%H:%M:%S:%f][%-6l] %v");
  auto const& l    = lines[0];
  auto const tid_end = l.find(']');  // the thread id is at least 6 wide
  ASSERT_NE(tid_end, std::string::npos);
  EXPECT_GE(tid_end, 7u);
  EXPECT_EQ(l[0], '[');
  ASSERT_GE(l.size(), tid_end + 18);
  EXPECT_EQ(l.substr(tid_end + 1, 1), "[");           // [HH:MM:SS:ffffff]
  EXPECT_EQ(l[tid_end + 4], ':');
  EXPECT_EQ(l[tid_end + 7], ':');
  EXPECT_EQ(l[tid_end + 10], ':');
  EXPECT_EQ(l[tid_end + 17], ']');
}

TEST_F(DefaultLoggerCapture, LevelIsTheRustLoggers)
{
  rmm::default_logger().set_level(level_enum::error);
  EXPECT_EQ(rmm_rs::logger_level(), static_cast<int>(level_enum::error));
  rmm_rs::logger_set_level(static_cast<int>(level_enum::trace));
  EXPECT_EQ(rmm::default_logger().level(), level_enum::trace);
  EXPECT_TRUE(rmm::default_logger().should_log(level_enum::trace));
  rmm::default_logger().set_level(level_enum::off);
  EXPECT_FALSE(rmm::default_logger().should_log(level_enum::critical));
  RMM_LOG_CRITICAL("hidden");
  EXPECT_EQ(out_.str(), "");
  rmm::default_logger().flush_on(level_enum::warn);
  EXPECT_EQ(rmm_rs::logger_flush_level(), static_cast<int>(level_enum::warn));
  rmm::default_logger().flush_on(level_enum::off);
  EXPECT_EQ(rmm::default_logger().flush_level(), level_enum::off);
}

TEST(RapidsLogger, FileSinkPatternAndLevels)
{
  auto const path = logger_temp_path("file.log");
  {
    rapids_logger::logger log{"mine", path};
    log.set_pattern("%L|%n|%l|%v|%%");
    log.trace("hidden");
    log.info("a %s b", std::string{"x"});
    log.set_level(level_enum::trace);
    log.trace("t");
    log.sinks().push_back(std::make_shared<rapids_logger::null_sink_mt>());
    log.error("e %d", 3);
  }  // destroyed: flushed
  std::ifstream in{path};
  std::string const text{std::istreambuf_iterator<char>{in}, {}};
  std::remove(path.c_str());
  EXPECT_EQ(text, "I|mine|info|a x b|%\nT|mine|trace|t|%\nE|mine|error|e 3|%\n");
}

std::vector<std::string>& callback_lines()
{
  static std::vector<std::string> lines;
  return lines;
}

TEST(RapidsLogger, CallbackAndOstreamSinks)
{
  std::ostringstream out;
  rapids_logger::logger log{"cb", out};
  log.sinks().push_back(std::make_shared<rapids_logger::callback_sink_mt>(
    [](int lvl, char const* msg) { callback_lines().push_back(std::to_string(lvl) + ":" + msg); }));
  log.set_pattern("%-5l|%5v|%=7n|");
  log.warn("w");
  EXPECT_EQ(out.str(), "warning|    w|  cb   |\n");
  ASSERT_EQ(callback_lines().size(), 1u);
  EXPECT_EQ(callback_lines()[0], "3:warning|    w|  cb   |\n");
  log.sinks().pop_back();
  log.critical("c");
  EXPECT_EQ(callback_lines().size(), 1u);
  EXPECT_THROW((rapids_logger::basic_file_sink_mt{"/dev/null/x.log"}), std::runtime_error);
}

// A fresh process (gtest's threadsafe death-test style re-runs this test alone) names a file in
// RMM_DEBUG_LOG_FILE, logs from C++, and exits: the exit hook makes Rust log at debug level. Both
// lines must be in the file, in that order.
TEST(LoggerEnvironment, CppAndRustLinesLandInTheFileFromTheEnvironment)
{
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  // Not logger_temp_path(): the child is another process, with another pid.
  auto const path = ::testing::TempDir() + "rmm_logger_test_environment.log";
  std::remove(path.c_str());
  EXPECT_EXIT(
    {
      ::setenv("RMM_DEBUG_LOG_FILE", path.c_str(), 1);
      rmm::default_logger().set_level(level_enum::debug);
      RMM_LOG_WARN("from c++ %d", 7);
      RMM_LOG_TRACE("hidden");
      rmm::detail::register_process_exit_hook();
      std::exit(0);
    },
    ::testing::ExitedWithCode(0),
    "");
  std::ifstream in{path};
  std::string const text{std::istreambuf_iterator<char>{in}, {}};
  std::remove(path.c_str());
  auto const lines = lines_of(text);
  ASSERT_EQ(lines.size(), 2u) << text;
  EXPECT_TRUE(ends_with(lines[0], "][warning] from c++ 7")) << text;
  EXPECT_TRUE(ends_with(lines[1], "][debug ] process is exiting: resources leave the CUDA driver alone from now on"))
    << text;
}

}  // namespace
