// rapids_logger's file sink never writes through a symbolic link planted at its path and creates
// its file with mode 0644; its pattern's local time reads no environment per line (a later
// setenv("TZ")/tzset, as Python's os.environ and time.tzset() do, changes nothing), so it cannot
// race with setenv on another thread as localtime_r did.
#include <rmm/logger.hpp>

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

namespace {

std::string temp_path(char const* name)
{
  return ::testing::TempDir() + "rmm_log_files_" + std::to_string(::getpid()) + "_" + name;
}

std::string read_file(std::string const& path)
{
  std::ifstream in{path};
  return std::string{std::istreambuf_iterator<char>{in}, {}};
}

TEST(LogFiles, FileSinkRefusesASymbolicLink)
{
  auto const victim = temp_path("victim");
  auto const link   = temp_path("link.log");
  std::remove(link.c_str());
  { std::ofstream{victim} << "another user's file\n"; }
  ASSERT_EQ(::symlink(victim.c_str(), link.c_str()), 0);
  for (bool truncate : {true, false}) {
    try {
      rapids_logger::basic_file_sink_mt sink{link, truncate};
      ADD_FAILURE() << "opened through a link (truncate=" << truncate << ")";
    } catch (std::runtime_error const& e) {
      std::string const what = e.what();
      EXPECT_NE(what.find(link), std::string::npos) << what;
      EXPECT_NE(what.find("symbolic link"), std::string::npos) << what;
    }
    EXPECT_EQ(read_file(victim), "another user's file\n");
  }
  std::remove(link.c_str());
  std::remove(victim.c_str());
}

TEST(LogFiles, FileSinkCreatesMode0644AndKeepsTruncateAndAppend)
{
  auto const path = temp_path("mode.log");
  std::remove(path.c_str());
  mode_t const old_mask = ::umask(0);  // fopen would ask for 0666
  {
    rapids_logger::logger log{"m", path};
    log.set_pattern("%v");
    log.info("one");
  }
  ::umask(old_mask);
  struct stat st {};
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  {
    auto sink = std::make_shared<rapids_logger::basic_file_sink_mt>(path);  // appends by default
    sink->write(rapids_logger::level_enum::info, "two");
  }
  EXPECT_EQ(read_file(path), "one\ntwo\n");
  {
    auto sink = std::make_shared<rapids_logger::basic_file_sink_mt>(path, true);
    sink->write(rapids_logger::level_enum::info, "three");
  }
  EXPECT_EQ(read_file(path), "three\n");
  std::remove(path.c_str());
}

/// The C library's UTC offset now, in seconds.
long c_library_offset_now()
{
  std::time_t const now = std::time(nullptr);
  std::tm tm{};
  ::localtime_r(&now, &tm);
  return tm.tm_gmtoff;
}

TEST(LoggerLocalTime, ChangingTzAfterwardsChangesNoLine)
{
  std::ostringstream out;
  rapids_logger::logger log{"tz", out};
  log.set_pattern("%H:%M");
  log.info("asks the zone if nobody has yet");
  char const* old_tz = std::getenv("TZ");
  std::string const saved = old_tz != nullptr ? old_tz : "";
  // A zone whose offset differs from the one in force now.
  char const* other = c_library_offset_now() == 19800 ? "<+0300>-3" : "<+0530>-5:30";
  for (int attempt = 0; attempt < 3; ++attempt) {
    out.str("");
    std::time_t const before = std::time(nullptr) / 60;
    log.info("before");
    ::setenv("TZ", other, 1);
    ::tzset();
    log.info("after");
    if (old_tz != nullptr) {
      ::setenv("TZ", saved.c_str(), 1);
    } else {
      ::unsetenv("TZ");
    }
    ::tzset();
    if (std::time(nullptr) / 60 != before) { continue; }  // a minute turned meanwhile
    std::istringstream lines{out.str()};
    std::string first, second;
    std::getline(lines, first);
    std::getline(lines, second);
    EXPECT_EQ(first, second) << "a line followed TZ=" << other;
    return;
  }
  FAIL() << "the minute turned in each of three attempts";
}

}  // namespace
