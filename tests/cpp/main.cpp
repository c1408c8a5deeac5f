// Test runner: GoogleTest, with one line up front saying whether GPU tests will run.
#include <rmm/cuda_device.hpp>

#include <gtest/gtest.h>

#include <cstdio>

int main(int argc, char** argv)
{
  ::testing::InitGoogleTest(&argc, argv);
  if (rmm::get_num_cuda_devices() == 0) {
    std::puts("skipped: no CUDA device (GPU tests skip; host-only bridge tests still run)");
  }
  return RUN_ALL_TESTS();
}
