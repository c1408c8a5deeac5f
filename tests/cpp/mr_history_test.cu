// `rmm::mr::history_resource_adaptor` (an rmm-rs addition): the conformance suite over a pool on
// host memory, recording on and off, the snapshot's pickle and its dumps.
#include "mr_conformance.hpp"

#include <rmm/mr/history_resource_adaptor.hpp>

#include <cstdio>
#include <elf.h>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

namespace rmm::test {
namespace {
struct history_factory {
  static constexpr bool needs_gpu = false;
  static auto make() { return rmm::mr::history_resource_adaptor{host_pool()}; }
};

std::filesystem::path scratch_dir(char const* name)
{
  auto dir = std::filesystem::temp_directory_path() / (std::string{name} + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

TEST(HistoryAdaptor, RecordsOnlyWhenAskedAndBoundsTheRing)
{
  rmm::mr::history_resource_adaptor mr{host_pool()};
  EXPECT_FALSE(mr.is_recording());
  mr.deallocate_sync(mr.allocate_sync(1000, 256), 1000, 256);
  EXPECT_EQ(mr.history_length(), 0U);
  EXPECT_THROW(mr.record_history(true, 0), rmm::logic_error);
  mr.record_history(true, 3);
  EXPECT_TRUE(mr.is_recording());
  for (std::size_t n : {256, 512, 768}) { mr.deallocate_sync(mr.allocate_sync(n, 256), n, 256); }
  EXPECT_EQ(mr.history_length(), 3U);
  mr.record_history(false, 3, true);
  EXPECT_FALSE(mr.is_recording());
  EXPECT_EQ(mr.history_length(), 0U);
}

TEST(HistoryAdaptor, SnapshotIsAPickleAndDumps)
{
  rmm::mr::history_resource_adaptor mr{host_pool()};
  mr.record_history();
  void* p = mr.allocate_sync(5000, 256);
  auto const bytes = mr.snapshot();
  ASSERT_GT(bytes.size(), 3U);
  EXPECT_EQ(bytes[0], 0x80);  // PROTO 2
  EXPECT_EQ(bytes[1], 2);
  EXPECT_EQ(bytes.back(), '.');  // STOP
  auto const dir  = scratch_dir("rmm_history_cpp_");
  auto const path = dir / "snapshot.pickle";
  mr.dump_snapshot(path.string());
  EXPECT_EQ(std::filesystem::file_size(path), bytes.size());
  EXPECT_THROW(mr.dump_snapshot((dir / "missing" / "x.pickle").string()), rmm::logic_error);
  mr.deallocate_sync(p, 5000, 256);
  std::filesystem::remove_all(dir);
}

// Whether this program still has its symbol table (a section of type SHT_SYMTAB): a program
// stripped of it, as the GPU package strips, has frames without names.
bool has_symbol_table()
{
  std::ifstream exe{"/proc/self/exe", std::ios::binary};
  Elf64_Ehdr header{};
  if (!exe.read(reinterpret_cast<char*>(&header), sizeof header)) { return false; }
  exe.seekg(static_cast<std::streamoff>(header.e_shoff));
  for (int i = 0; i < header.e_shnum; ++i) {
    Elf64_Shdr section{};
    if (!exe.read(reinterpret_cast<char*>(&section), sizeof section)) { return false; }
    if (section.sh_type == SHT_SYMTAB) { return true; }
  }
  return false;
}

TEST(HistoryAdaptor, NativeStacksNameTheCaller)
{
  if (!has_symbol_table()) { GTEST_SKIP() << "this program is stripped of its symbol table"; }
  rmm::mr::history_resource_adaptor mr{host_pool()};
  mr.record_history(true, 16, false, true);
  void* p = mr.allocate_sync(4096, 256);
  auto const bytes = mr.snapshot();
  std::string const text(bytes.begin(), bytes.end());
  // This test's body, as the symbol table names it (mangled), is among the frames.
  EXPECT_NE(text.find("NativeStacksNameTheCaller"), std::string::npos);
  mr.deallocate_sync(p, 4096, 256);
}

TEST(HistoryAdaptor, OutOfMemoryNamesTheDumpedFiles)
{
  rmm::mr::history_resource_adaptor mr{
    rmm::mr::pool_memory_resource{new_delete_resource{}, std::size_t{1} << 20, std::size_t{2} << 20}};
  auto const dir = scratch_dir("rmm_history_cpp_oom_");
  mr.dump_on_oom(dir.string());
  mr.record_history();
  std::string message;
  try {
    (void)mr.allocate_sync(std::size_t{4} << 20, 256);
  } catch (rmm::out_of_memory const& e) {
    message = e.what();
  }
  EXPECT_NE(message.find(dir.string()), std::string::npos) << message;
  EXPECT_NE(message.find(".pickle"), std::string::npos) << message;
  EXPECT_NE(message.find(".svg"), std::string::npos) << message;
  int files = 0;
  for (auto const& entry : std::filesystem::directory_iterator{dir}) {
    (void)entry;
    ++files;
  }
  EXPECT_EQ(files, 2);
  mr.dump_on_oom(std::nullopt);
  std::filesystem::remove_all(dir);
}
}  // namespace

INSTANTIATE_TYPED_TEST_SUITE_P(History, MrConformance, history_factory);
}  // namespace rmm::test
