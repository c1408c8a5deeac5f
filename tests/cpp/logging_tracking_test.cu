// RMM's tracking map (get_outstanding_allocations, allocation_info, stack_trace) and the logging
// adaptor's constructors and CSV rows, over host memory (no GPU).
#include "mr_conformance.hpp"

#include <rmm/detail/stack_trace.hpp>
#include <rmm/error.hpp>
#include <rmm/mr/limiting_resource_adaptor.hpp>
#include <rmm/mr/logging_resource_adaptor.hpp>
#include <rmm/mr/tracking_resource_adaptor.hpp>

#include <gtest/gtest.h>

#include <sys/syscall.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace rmm::test {
namespace {

using tracking = rmm::mr::tracking_resource_adaptor;

static_assert(std::is_same_v<decltype(std::declval<tracking const&>().get_outstanding_allocations()),
                             std::map<void*, tracking::allocation_info> const&>);
static_assert(std::is_same_v<decltype(tracking::allocation_info::strace),
                             std::unique_ptr<rmm::detail::stack_trace>>);
static_assert(std::is_same_v<decltype(tracking::allocation_info::allocation_size), std::size_t>);
static_assert(!std::is_default_constructible_v<tracking::allocation_info>);

TEST(TrackingMap, HoldsEverySizeAndNoStackByDefault)
{
  tracking mr{host_pool()};
  void* a = mr.allocate(default_stream(), 100);
  void* b = mr.allocate(default_stream(), 5000);
  auto const& map = mr.get_outstanding_allocations();
  ASSERT_EQ(map.size(), 2U);
  EXPECT_EQ(map.at(a).allocation_size, 100U);
  EXPECT_EQ(map.at(b).allocation_size, 5000U);
  EXPECT_EQ(map.at(a).strace, nullptr);
  EXPECT_EQ(mr.get_allocated_bytes(), 5100U);

  tracking copy = mr;  // copies share the record
  mr.deallocate(default_stream(), a, 100);
  auto const& after = copy.get_outstanding_allocations();
  ASSERT_EQ(after.size(), 1U);
  EXPECT_EQ(after.begin()->first, b);
  mr.deallocate(default_stream(), b, 5000);
  EXPECT_TRUE(mr.get_outstanding_allocations().empty());
  EXPECT_EQ(mr.get_allocated_bytes(), 0U);
}

TEST(TrackingMap, CapturesStacksWhenAsked)
{
  tracking mr{host_pool(), true};
  void* p    = mr.allocate(default_stream(), 256);
  auto& info = mr.get_outstanding_allocations().at(p);
  ASSERT_NE(info.strace, nullptr);
  std::ostringstream oss;
  oss << *info.strace;
  EXPECT_EQ(oss.str().rfind("#0 in ", 0), 0U) << oss.str();
  EXPECT_NE(oss.str().find("\n#1 in "), std::string::npos) << oss.str();
  mr.deallocate(default_stream(), p, 256);
}

TEST(TrackingMap, StringIsRmmsFormat)
{
  tracking mr{host_pool()};
  void* a = mr.allocate(default_stream(), 300);
  void* b = mr.allocate(default_stream(), 7);
  std::map<void*, std::size_t> const sorted{{a, 300}, {b, 7}};
  std::ostringstream want;
  for (auto const& [p, n] : sorted) {
    want << p << ": " << n << " B" << std::endl;
  }
  EXPECT_EQ(mr.get_outstanding_allocations_str(), want.str());
  mr.log_outstanding_allocations();
  mr.deallocate(default_stream(), a, 300);
  mr.deallocate(default_stream(), b, 7);
  EXPECT_EQ(mr.get_outstanding_allocations_str(), "");

  tracking stacks{host_pool(), true};
  void* c = stacks.allocate(default_stream(), 64);
  auto const s = stacks.get_outstanding_allocations_str();
  std::ostringstream head;
  head << c << ": 64 B : callstack:\n#0 in ";
  EXPECT_EQ(s.rfind(head.str(), 0), 0U) << s;
  stacks.deallocate(default_stream(), c, 64);
}

TEST(StackTrace, CapturesThisFrameAndPrintsRmmsLines)
{
  rmm::detail::stack_trace trace;
  std::ostringstream oss;
  oss << trace;
  std::string const text = oss.str();
  EXPECT_EQ(text.rfind("#0 in ", 0), 0U) << text;
  EXPECT_NE(text.find(" from "), std::string::npos) << text;
  EXPECT_EQ(text.back(), '\n');
}

// ---------------------------------------------------------------------------------------------
// logging_resource_adaptor
// ---------------------------------------------------------------------------------------------

std::vector<std::string> lines_of(std::string const& text)
{
  std::vector<std::string> out;
  std::istringstream in{text};
  for (std::string l; std::getline(in, l);) {
    out.push_back(l);
  }
  return out;
}

std::string hex(void const* p)
{
  std::ostringstream o;
  o << p;
  return o.str();
}

/// `row` is `<this thread's OS id>,HH:MM:SS.ffffff,<rest>`.
void expect_row(std::string const& row, std::string const& rest)
{
  static std::regex const time{R"(^[0-9]+,[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6},)"};
  std::smatch m;
  ASSERT_TRUE(std::regex_search(row, m, time)) << row;
  EXPECT_EQ(row.substr(0, row.find(',')), std::to_string(::syscall(SYS_gettid))) << row;
  EXPECT_EQ(row.substr(m.length()), rest) << row;
}

TEST(LoggingAdaptor, OstreamGetsHeaderAndRmmsRows)
{
  std::ostringstream oss;
  rmm::mr::limiting_resource_adaptor limit{host_pool(), 4096};
  rmm::mr::logging_resource_adaptor mr{limit, oss};
  EXPECT_EQ(mr.header(), "Thread,Time,Action,Pointer,Size,Stream");
  void* p = mr.allocate(default_stream(), 100);
  cuda::stream_ref const per_thread{cudaStreamPerThread};
  EXPECT_THROW((void)mr.allocate(per_thread, 1 << 20), rmm::out_of_memory);
  mr.deallocate(default_stream(), p, 100);
  EXPECT_EQ(mr.allocate(default_stream(), 0), nullptr);  // logged, as in RMM
  mr.flush();
  auto const l = lines_of(oss.str());
  ASSERT_EQ(l.size(), 5U) << oss.str();
  EXPECT_EQ(l[0], mr.header());
  expect_row(l[1], "allocate," + hex(p) + ",100,0");
  expect_row(l[2], "allocate failure,(nil),1048576,0x2");
  expect_row(l[3], "free," + hex(p) + ",100,0");
  expect_row(l[4], "allocate,(nil),0,0");
}

TEST(LoggingAdaptor, AutoFlushWritesEachLineThrough)
{
  std::string const path = ::testing::TempDir() + "rmm_rs_logging_auto_flush.csv";
  std::ofstream out{path};
  rmm::mr::logging_resource_adaptor mr{host_pool(), out, true};
  void* p = mr.allocate(default_stream(), 64);
  auto read = [&] {
    std::ifstream in{path};
    std::stringstream s;
    s << in.rdbuf();
    return lines_of(s.str());
  };
  EXPECT_EQ(read().size(), 2U) << "header and row on disk without flush()";
  mr.deallocate(default_stream(), p, 64);
  EXPECT_EQ(read().size(), 3U);
  std::remove(path.c_str());
}

TEST(LoggingAdaptor, FileNameAndRmmLogFile)
{
  std::string const path = ::testing::TempDir() + "rmm_rs_logging_env.csv";
  ASSERT_EQ(::setenv("RMM_LOG_FILE", path.c_str(), 1), 0);
  EXPECT_EQ(rmm::mr::logging_resource_adaptor::get_default_filename(), path);
  {
    rmm::mr::logging_resource_adaptor mr{host_pool()};
    void* p = mr.allocate(default_stream(), 10);
    mr.deallocate(default_stream(), p, 10);
    mr.flush();
  }
  ::unsetenv("RMM_LOG_FILE");
  std::ifstream in{path};
  std::stringstream s;
  s << in.rdbuf();
  auto const l = lines_of(s.str());
  ASSERT_EQ(l.size(), 3U) << s.str();
  EXPECT_EQ(l[0], "Thread,Time,Action,Pointer,Size,Stream");
  std::remove(path.c_str());
  EXPECT_THROW((rmm::mr::logging_resource_adaptor{host_pool(), ""}), rmm::logic_error);
}

/// A stream buffer whose every write throws.
struct throwing_buf : std::streambuf {
  int_type overflow(int_type) override { throw std::runtime_error{"disk full"}; }
  std::streamsize xsputn(char const*, std::streamsize) override
  {
    throw std::runtime_error{"disk full"};
  }
};

TEST(LoggingAdaptor, AThrowingStreamFailsFlushNotAllocations)
{
  throwing_buf buf;
  std::ostream os{&buf};
  os.exceptions(std::ios::badbit);  // the stream rethrows what its buffer throws
  rmm::mr::logging_resource_adaptor mr{host_pool(), os};
  void* p = mr.allocate(default_stream(), 128);
  ASSERT_NE(p, nullptr);
  mr.deallocate(default_stream(), p, 128);
  EXPECT_THROW(mr.flush(), rmm::logic_error);
}

#if defined(RMM_RS_LOGGING_HAS_SINKS)
TEST(LoggingAdaptor, SinksEachGetEveryLine)
{
  std::ostringstream a;
  std::ostringstream b;
  rmm::mr::logging_resource_adaptor mr{host_pool(),
                                       {std::make_shared<rapids_logger::ostream_sink_mt>(a),
                                        std::make_shared<rapids_logger::ostream_sink_mt>(b)}};
  void* p = mr.allocate(default_stream(), 32);
  mr.deallocate(default_stream(), p, 32);
  mr.flush();
  auto const l = lines_of(a.str());
  ASSERT_EQ(l.size(), 3U) << a.str();
  EXPECT_EQ(a.str(), b.str());
  EXPECT_EQ(l[0], mr.header());
  expect_row(l[1], "allocate," + hex(p) + ",32,0");
}
#endif

}  // namespace
}  // namespace rmm::test
