// rmm::rs::build_cuda_major(): the linked library and this program follow one CUDA major.
#include <rmm/build_info.hpp>

#include <gtest/gtest.h>

namespace {

TEST(BuildInfo, LibraryAndToolkitAgreeOnTheCudaMajor)
{
  EXPECT_TRUE(rmm::rs::build_cuda_major() == 12 || rmm::rs::build_cuda_major() == 13);
  EXPECT_EQ(rmm::rs::build_cuda_major(), rmm::rs::compiled_cuda_major)
    << "librmm_cpp.a was built for another CUDA major than the toolkit compiling this program";
}

}  // namespace
